package multipool

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/cells/podipam/nodeipam"
	"github.com/heraldlb/herald/tables"
)

// TestPoolByAnnotation: a pod annotated with a pool (or in a namespace so
// annotated) gets its address from a node CIDR of that pool; the pod's own
// annotation wins over its namespace's, ipv4-pool over ip-pool, an empty
// one counts as none (as in Cilium); other pods
// get the default pool's. Every address is in the CiliumNode's CIDRs of
// that pool, and the CNI result's gateway is the CIDR's second address.
func TestPoolByAnnotation(t *testing.T) {
	logAgentsOnFailure(t)
	plain := namespace(t, "plain", nil)
	greenNS := namespace(t, "green", map[string]string{tables.AnnotationIPPool: "green-pool"})
	n := nodes[0]
	for _, tt := range []struct {
		name, ns    string
		ann         map[string]string
		cidr, cidr6 string
	}{
		{"no annotation", plain, nil, defaultCIDR, defaultCIDR6},
		{"pod annotation", plain, map[string]string{tables.AnnotationIPPool: "green-pool"}, greenCIDR, greenCIDR6},
		{"namespace annotation", greenNS, nil, greenCIDR, greenCIDR6},
		{"pod beats namespace", greenNS, map[string]string{tables.AnnotationIPPool: "default"}, defaultCIDR, defaultCIDR6},
		{"an empty pod annotation is none: the namespace's", greenNS, map[string]string{tables.AnnotationIPPool: ""}, greenCIDR, greenCIDR6},
		{"a blank ipv4-pool is none: ip-pool", plain, map[string]string{tables.AnnotationIPv4Pool: " ", tables.AnnotationIPPool: "green-pool"}, greenCIDR, greenCIDR6},
		{"ipv4-pool beats ip-pool, per family", plain, map[string]string{tables.AnnotationIPPool: "default", tables.AnnotationIPv4Pool: "green-pool"}, greenCIDR, defaultCIDR6},
		{"ipv6-pool beats ip-pool, per family", plain, map[string]string{tables.AnnotationIPPool: "default", tables.AnnotationIPv6Pool: "green-pool"}, defaultCIDR, greenCIDR6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startPod(t, n, tt.ns, fmt.Sprintf("pod-%d", podSeq.Load()+1), tt.ann)
			defer p.stop(t)
			if len(p.IPs()) != 2 || !inPrefix(p.IPs(), tt.cidr) || !inPrefix(p.IPs(), tt.cidr6) {
				t.Fatalf("pod got %s, want an address of %s and one of %s", joinAddrs(p.IPs()), tt.cidr, tt.cidr6)
			}
			cn, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), n.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, ipc := range p.result.IPs {
				found := false
				for _, a := range cn.Spec.IPAM.Pools.Allocated {
					for _, c := range a.CIDRs {
						if mustPrefix(string(c)).Contains(mustAddr(ipc.Address.IP.String())) {
							found = true
							if want := tables.PodCIDRGateway(mustPrefix(string(c))).String(); ipc.Gateway.String() != want {
								t.Errorf("gateway %s, want %s (the CIDR's second address)", ipc.Gateway, want)
							}
						}
					}
				}
				if !found {
					t.Fatalf("pod address %s is in none of the CiliumNode's CIDRs %+v", ipc.Address.IP, cn.Spec.IPAM.Pools.Allocated)
				}
			}
		})
	}
}

// TestUnknownPool: a pod naming a pool that does not exist gets a CNI error
// naming the pool, and an Event says so.
func TestUnknownPool(t *testing.T) {
	logAgentsOnFailure(t)
	ns := namespace(t, "unknown", nil)
	p := newPod(t, nodes[0], ns, "lost", map[string]string{tables.AnnotationIPPool: "no-such-pool"})
	defer p.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := p.add(ctx)
	if err == nil || !strings.Contains(err.Error(), `CiliumPodIPPool "no-such-pool"`) {
		t.Fatalf("ADD = %v, want an error naming the pool", err)
	}
	waitEvent(t, ns, "Pod", "lost", nodeipam.EventUnknownPool, `"no-such-pool"`)
}

// TestCrossNodePing: pods on different nodes reach each other through the
// routes each node keeps to the others' pod CIDRs.
func TestCrossNodePing(t *testing.T) {
	logAgentsOnFailure(t)
	ns := namespace(t, "ping", nil)
	a := startPod(t, nodes[0], ns, "a", nil)
	defer a.stop(t)
	b := startPod(t, nodes[1], ns, "b", map[string]string{tables.AnnotationIPPool: "green-pool"})
	defer b.stop(t)
	ctx := context.Background()
	for _, f := range []tables.Family{tables.IPv4, tables.IPv6} {
		waitFor(t, timeout, func() (bool, string) {
			if err := a.netns.Ping(ctx, b.ipOf(f).String()); err != nil {
				return false, fmt.Sprintf("ping %s (node2) from %s (node1): %v", b.ipOf(f), a.ipOf(f), err)
			}
			if err := b.netns.Ping(ctx, a.ipOf(f).String()); err != nil {
				return false, fmt.Sprintf("ping %s (node1) from %s (node2): %v", a.ipOf(f), b.ipOf(f), err)
			}
			return true, ""
		})
	}
}

// TestRequested: the node asks for roundUp(inUse + pending + pre, pre) of
// the default pool (pre 8), and exactly what is in use of a pool without a
// pre-allocation.
func TestRequested(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[2]
	ns := namespace(t, "requested", nil)
	demand := func(pool string) (tables.PoolDemand, error) {
		cn, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), n.name, metav1.GetOptions{})
		if err != nil {
			return tables.PoolDemand{}, err
		}
		for _, r := range cn.Spec.IPAM.Pools.Requested {
			if r.Pool == pool {
				return tables.PoolDemand{Pool: pool, IPv4: r.Needed.IPv4Addrs}, nil
			}
		}
		return tables.PoolDemand{Pool: pool}, nil
	}
	expect := func(pool string, want int) {
		t.Helper()
		waitFor(t, timeout, func() (bool, string) {
			d, err := demand(pool)
			if err != nil {
				return false, err.Error()
			}
			return d.IPv4 == want, fmt.Sprintf("%s requests %d IPv4 addresses of %s, want %d", n.name, d.IPv4, pool, want)
		})
	}
	expect("default", 8) // roundUp(0+0+8, 8)
	var pods []*pod
	for i := 0; i < 9; i++ {
		pods = append(pods, startPod(t, n, ns, fmt.Sprintf("r%d", i), nil))
	}
	expect("default", 24) // roundUp(9+0+8, 8)
	g := startPod(t, n, ns, "g", map[string]string{tables.AnnotationIPPool: "green-pool"})
	expect("green-pool", 1) // no pre-allocation: what is in use
	g.stop(t)
	expect("green-pool", 0)
	for _, p := range pods {
		p.stop(t)
	}
	expect("default", 8)
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestDefaultIPPool: on an agent started with ipam-default-ip-pool, a pod
// whose annotations and namespace name no pool gets its addresses from
// that pool instead of default.
func TestDefaultIPPool(t *testing.T) {
	logAgentsOnFailure(t)
	n := startExtraNode(t, []string{"--ipam-default-ip-pool=green-pool", "--ipam-multi-pool-pre-allocation=green-pool=2"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	p := startPod(t, n, namespace(t, "plain", nil), "p", nil)
	defer p.stop(t)
	if !inPrefix(p.IPs(), greenCIDR) || !inPrefix(p.IPs(), greenCIDR6) {
		t.Fatalf("a pod that names no pool, on an agent whose default pool is green-pool, got %s", joinAddrs(p.IPs()))
	}
}
