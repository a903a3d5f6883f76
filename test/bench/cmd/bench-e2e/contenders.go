package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/cluster"
)

type kind int

const (
	kindAlone kind = iota
	kindNull
	kindHerald
	kindMetalLB
)

const (
	// leaseNamespace is herald-agent's --k8s-namespace.
	leaseNamespace = "kube-system"
	// nodeName is herald-agent's --node-name.
	nodeName         = "bench"
	metallbNamespace = "metallb-system"
	poolName         = "bench"
)

// contender is one controller under measurement (or none: kindAlone).
type contender struct {
	kind  kind
	label string
	bin   string
	crds  string   // extra CRDs to install (MetalLB's)
	args  []string // extra flags
}

// createPool gives the contender one pool of addresses, in its own API.
func (c contender) createPool(ctx context.Context, cl *cluster.Cluster, pool netip.Prefix) error {
	switch c.kind {
	case kindHerald:
		herald, err := versioned.NewForConfig(cl.RESTConfig)
		if err != nil {
			return err
		}
		_, err = herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Create(ctx, &v2alpha1.CiliumLoadBalancerIPPool{
			ObjectMeta: metav1.ObjectMeta{Name: poolName},
			Spec: v2alpha1.CiliumLoadBalancerIPPoolSpec{
				Blocks: []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: pool.String()}},
			},
		}, metav1.CreateOptions{})
		return err
	case kindMetalLB:
		dyn, err := dynamic.NewForConfig(cl.RESTConfig)
		if err != nil {
			return err
		}
		gvr := schema.GroupVersionResource{Group: "metallb.io", Version: "v1beta1", Resource: "ipaddresspools"}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "metallb.io/v1beta1",
			"kind":       "IPAddressPool",
			"metadata":   map[string]any{"name": poolName, "namespace": metallbNamespace},
			"spec":       map[string]any{"addresses": []any{pool.String()}},
		}}
		_, err = dyn.Resource(gvr).Namespace(metallbNamespace).Create(ctx, obj, metav1.CreateOptions{})
		return err
	}
	return nil
}

// start runs the contender against the cluster.
func (c contender) start(kubeconfig string, o options) (*proc, error) {
	p, err := newProc(c.label)
	if err != nil {
		return nil, err
	}
	var args []string
	switch c.kind {
	case kindNull:
		args = []string{"-kubeconfig", kubeconfig, "-pool", o.pool.String()}
	case kindHerald:
		args = []string{
			"--kubeconfig", kubeconfig,
			"--node-name", nodeName,
			"--k8s-namespace", leaseNamespace,
			"--dbg-socket", filepath.Join(p.tmpDir, "herald.sock"),
		}
		prof, port, err := profileArgs(o)
		if err != nil {
			return nil, err
		}
		args, p.pprofPort = append(args, prof...), port
	case kindMetalLB:
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		args = []string{
			"-kubeconfig", kubeconfig,
			"-namespace", metallbNamespace,
			"-webhook-mode", "disabled",
			"-disable-cert-rotation",
			"-port", strconv.Itoa(port),
		}
	default:
		return nil, fmt.Errorf("%s: nothing to start", c.label)
	}
	if err := p.start(c.bin, append(args, c.args...)); err != nil {
		p.cleanup(false)
		return nil, err
	}
	return p, nil
}

// freePort is a loopback TCP port nobody listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
