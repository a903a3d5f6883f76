package k8swatch

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/internal/k8sreflect"
	"github.com/heraldlb/herald/cells/internal/reconnect"
	"github.com/heraldlb/herald/tables"
)

// params are what the reflectors need: the clients, this node (for the
// kinds narrowed to it), the kinds defined, and what the cells asked for.
type params struct {
	cell.In

	Jobs     job.Group
	DB       *statedb.DB
	Kube     kubernetes.Interface
	Herald   versioned.Interface
	Agent    agentconfig.Config
	Fresh    *freshness
	Log      *slog.Logger
	Gate     *reconnect.Gate
	Kinds    []k8sreflect.Kind   `group:"k8s-kinds"`
	Requests []tables.Reflection `group:"reflections"`
}

// reflectRequested runs a reflector for every table some cell asked for,
// once however many asked.
func reflectRequested(p params) error {
	kinds := map[string]k8sreflect.Kind{}
	for _, k := range p.Kinds {
		if _, dup := kinds[k.Table]; dup {
			return fmt.Errorf("two Kubernetes kinds are defined for table %q", k.Table)
		}
		kinds[k.Table] = k
	}
	want := map[string]string{} // table -> namespace
	for _, r := range p.Requests {
		k, ok := kinds[r.Table]
		switch {
		case !ok:
			return fmt.Errorf("no Kubernetes kind is reflected into table %q", r.Table)
		case r.Namespace != "" && !k.Namespaced:
			return fmt.Errorf("table %q holds objects without a namespace; asked for namespace %q", r.Table, r.Namespace)
		}
		if ns, seen := want[r.Table]; seen && ns != r.Namespace {
			return fmt.Errorf("table %q asked for in namespaces %q and %q", r.Table, dashIfAll(ns), dashIfAll(r.Namespace))
		}
		want[r.Table] = r.Namespace
	}
	env := k8sreflect.Env{
		Clients: k8sreflect.Clients{Kube: p.Kube, Herald: p.Herald, Node: p.Agent.Node()},
		DB:      p.DB, Jobs: p.Jobs, Log: p.Log, Gate: p.Gate,
	}
	names := slices.Sorted(maps.Keys(want))
	for _, name := range names {
		if catchUp := kinds[name].Start(env, want[name]); catchUp != nil {
			p.Fresh.catchUps[name] = catchUp
		}
	}
	// The kinds no cell asked for: their features are off. Said so that
	// "why is X not watched?" is answered in the log.
	var unasked []string
	for _, name := range slices.Sorted(maps.Keys(kinds)) {
		if _, ok := want[name]; !ok {
			unasked = append(unasked, name)
		}
	}
	p.Log.Info("Reflecting Kubernetes objects", "tables", names, "unasked", unasked)
	return nil
}

func dashIfAll(ns string) string {
	if ns == "" {
		return "(all)"
	}
	return ns
}

// The kinds that several features read. A kind only one feature reads is
// defined in that feature's folder.

func serviceKind(t statedb.RWTable[*tables.Service]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*corev1.Service, *tables.Service]{
		Name: "services", Example: &corev1.Service{}, Namespaced: true,
		ListWatch: func(c k8sreflect.Clients, ns string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Kube.CoreV1().Services(ns), "")
		},
		Transform: tables.ServiceFromK8s,
		VersionOf: func(s *tables.Service) (string, string) { return s.Key(), s.ResourceVersion },
	})
}

// Every Node: which nodes a policy selects, routes to their pod CIDRs,
// the CIDRs of Nodes that are gone, BGP's node selectors.
func nodeKind(t statedb.RWTable[*tables.Node]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*corev1.Node, *tables.Node]{
		Name: "nodes", Example: &corev1.Node{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Kube.CoreV1().Nodes(), "")
		},
		Transform: tables.NodeFromK8s,
		VersionOf: func(n *tables.Node) (string, string) { return n.Name, n.ResourceVersion },
	})
}

func endpointSliceKind(t statedb.RWTable[*tables.EndpointSlice]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*discoveryv1.EndpointSlice, *tables.EndpointSlice]{
		Name: "endpoint-slices", Example: &discoveryv1.EndpointSlice{}, Namespaced: true,
		ListWatch: func(c k8sreflect.Clients, ns string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Kube.DiscoveryV1().EndpointSlices(ns), "")
		},
		Transform: tables.EndpointSliceFromK8s,
	})
}

func podIPPoolKind(t statedb.RWTable[*tables.PodIPPool]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*v2alpha1.CiliumPodIPPool, *tables.PodIPPool]{
		Name: "pod-ip-pools", Example: &v2alpha1.CiliumPodIPPool{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Herald.CiliumV2alpha1().CiliumPodIPPools(), "")
		},
		Transform: tables.PodIPPoolFromK8s,
		VersionOf: func(l *tables.PodIPPool) (string, string) { return l.Name, l.ResourceVersion },
	})
}

func ciliumNodeKind(t statedb.RWTable[*tables.CiliumNode]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*v2.CiliumNode, *tables.CiliumNode]{
		Name: "cilium-nodes", Example: &v2.CiliumNode{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Herald.CiliumV2().CiliumNodes(), "")
		},
		Transform: tables.CiliumNodeFromK8s,
		VersionOf: func(n *tables.CiliumNode) (string, string) { return n.Name, n.ResourceVersion },
	})
}

// LB IPAM's pools; the pod CIDR allocator reads them too (an overlap with
// a CiliumPodIPPool is a conflict).
func lbPoolKind(t statedb.RWTable[*tables.LBPool]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*v2alpha1.CiliumLoadBalancerIPPool, *tables.LBPool]{
		Name: "lb-pools", Example: &v2alpha1.CiliumLoadBalancerIPPool{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Herald.CiliumV2alpha1().CiliumLoadBalancerIPPools(), "")
		},
		Transform: tables.LBPoolFromK8s,
		VersionOf: func(l *tables.LBPool) (string, string) { return l.Name, l.ResourceVersion },
	})
}
