package cidrallocator

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
)

// parseAutoCreate parses auto-create-cilium-pod-ip-pools: pools (separated
// as poolSpecs says), each name=spec in Cilium's syntax
// ipv4-cidrs:a,b;ipv4-mask-size:24;ipv6-cidrs:...;ipv6-mask-size:n.
// The API server validates the rest when the pool is created.
func parseAutoCreate(value string) ([]*v2alpha1.CiliumPodIPPool, error) {
	specs, err := poolSpecs(value)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(specs))
	for n := range specs {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*v2alpha1.CiliumPodIPPool
	for _, name := range names {
		p := &v2alpha1.CiliumPodIPPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		var v4, v6 []v2alpha1.PoolCIDR
		var m4, m6 uint8
		for _, field := range strings.Split(strings.ReplaceAll(specs[name], " ", ""), ";") {
			if field == "" {
				continue
			}
			key, value, ok := strings.Cut(field, ":")
			if !ok {
				return nil, fmt.Errorf("pool %s: %q is not key:value", name, field)
			}
			switch key {
			case "ipv4-cidrs", "ipv6-cidrs":
				var cs []v2alpha1.PoolCIDR
				for _, c := range strings.Split(value, ",") {
					if c != "" {
						cs = append(cs, v2alpha1.PoolCIDR(c))
					}
				}
				if key == "ipv4-cidrs" {
					v4 = cs
				} else {
					v6 = cs
				}
			case "ipv4-mask-size", "ipv6-mask-size":
				n, err := strconv.ParseUint(value, 10, 8)
				if err != nil {
					return nil, fmt.Errorf("pool %s: %s: %q is not a mask size", name, key, value)
				}
				if key == "ipv4-mask-size" {
					m4 = uint8(n)
				} else {
					m6 = uint8(n)
				}
			default:
				return nil, fmt.Errorf("pool %s: unknown key %q (ipv4-cidrs, ipv4-mask-size, ipv6-cidrs, ipv6-mask-size)", name, key)
			}
		}
		if len(v4) > 0 {
			p.Spec.IPv4 = &v2alpha1.IPv4PoolSpec{CIDRs: v4, MaskSize: m4}
		}
		if len(v6) > 0 {
			p.Spec.IPv6 = &v2alpha1.IPv6PoolSpec{CIDRs: v6, MaskSize: m6}
		}
		if p.Spec.IPv4 == nil && p.Spec.IPv6 == nil {
			return nil, fmt.Errorf("pool %s: no ipv4-cidrs or ipv6-cidrs", name)
		}
		out = append(out, p)
	}
	return out, nil
}

// autoCreate creates the configured pools that do not exist yet; existing
// ones are left as they are (as Cilium does).
func autoCreate(ctx context.Context, client versioned.Interface, pools []*v2alpha1.CiliumPodIPPool) (created []string, err error) {
	for _, p := range pools {
		_, err := client.CiliumV2alpha1().CiliumPodIPPools().Create(ctx, p, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			return created, fmt.Errorf("creating CiliumPodIPPool %s: %w", p.Name, err)
		default:
			created = append(created, p.Name)
		}
	}
	return created, nil
}
