package k8swatch

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// listWatcher is the List and Watch of one typed client.
type listWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// listWatch adapts a typed client for an informer; fieldSelector, when
// set, narrows both calls.
func listWatch[L runtime.Object](c listWatcher[L], fieldSelector string) cache.ListerWatcher {
	narrow := func(o metav1.ListOptions) metav1.ListOptions {
		if fieldSelector != "" {
			o.FieldSelector = fieldSelector
		}
		return o
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, narrow(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, narrow(o))
		},
	}
}

// params are what the reflectors need: the clients, the tables, this node
// (for the kinds narrowed to it), and what the cells asked for.
type params struct {
	cell.In

	Jobs     job.Group
	DB       *statedb.DB
	Kube     kubernetes.Interface
	Herald   versioned.Interface
	Agent    agentconfig.Config
	Fresh    *freshness
	Log      *slog.Logger
	Requests []tables.Reflection `group:"reflections"`

	Services         statedb.RWTable[*tables.Service]
	LBPools          statedb.RWTable[*tables.LBPool]
	L2Policies       statedb.RWTable[*tables.L2Policy]
	Nodes            statedb.RWTable[*tables.Node]
	EndpointSlices   statedb.RWTable[*tables.EndpointSlice]
	L2Leases         statedb.RWTable[*tables.L2Lease]
	PodIPPools       statedb.RWTable[*tables.PodIPPool]
	CiliumNodes      statedb.RWTable[*tables.CiliumNode]
	Pods             statedb.RWTable[*tables.Pod]
	Namespaces       statedb.RWTable[*tables.Namespace]
	BGPClusterConfig statedb.RWTable[*tables.BGPClusterConfig]
	BGPPeerConfigs   statedb.RWTable[*tables.BGPPeerConfig]
	BGPAdvertisement statedb.RWTable[*tables.BGPAdvertisement]
	BGPNodeOverrides statedb.RWTable[*tables.BGPNodeOverride]
	BGPSecrets       statedb.RWTable[*tables.BGPSecret]
	BGPNodeConfigs   statedb.RWTable[*tables.BGPNodeConfig]
}

// kind is one reflector this cell can run, for the table of its name.
type kind struct {
	// namespaced: a request may narrow it to a namespace.
	namespaced bool
	run        func(p params, namespace string)
}

// reflectRequested runs a reflector for every table some cell asked for,
// once however many asked.
func reflectRequested(p params) error {
	want := map[string]string{} // table -> namespace
	for _, r := range p.Requests {
		k, ok := kinds[r.Table]
		switch {
		case !ok:
			return fmt.Errorf("no Kubernetes kind is reflected into table %q", r.Table)
		case r.Namespace != "" && !k.namespaced:
			return fmt.Errorf("table %q holds objects without a namespace; asked for namespace %q", r.Table, r.Namespace)
		}
		if ns, seen := want[r.Table]; seen && ns != r.Namespace {
			return fmt.Errorf("table %q asked for in namespaces %q and %q", r.Table, dashIfAll(ns), dashIfAll(r.Namespace))
		}
		want[r.Table] = r.Namespace
	}
	names := slices.Sorted(maps.Keys(want))
	for _, name := range names {
		kinds[name].run(p, want[name])
	}
	p.Log.Info("Reflecting Kubernetes objects", "tables", names)
	return nil
}

func dashIfAll(ns string) string {
	if ns == "" {
		return "(all)"
	}
	return ns
}

// start fills in what every reflector shares and registers its job.
func start[K runtime.Object, Obj any](p params, r *reflector[K, Obj]) {
	r.db, r.log = p.DB, p.Log
	r.register(p.Jobs, p.Fresh)
}

// kinds are the reflectors, by table. Those with versionOf can catch up
// with the API server (tables.Freshness).
var kinds = map[string]kind{
	tables.ServicesTableName: {namespaced: true, run: func(p params, ns string) {
		start(p, &reflector[*corev1.Service, *tables.Service]{
			name: "services", table: p.Services,
			lw:        listWatch[*corev1.ServiceList](p.Kube.CoreV1().Services(ns), ""),
			example:   &corev1.Service{},
			transform: tables.ServiceFromK8s,
			versionOf: func(s *tables.Service) (string, string) { return s.Key(), s.ResourceVersion },
		})
	}},
	tables.LBPoolsTableName: {run: func(p params, _ string) {
		start(p, &reflector[*v2alpha1.CiliumLoadBalancerIPPool, *tables.LBPool]{
			name: "lb-pools", table: p.LBPools,
			lw:        listWatch[*v2alpha1.CiliumLoadBalancerIPPoolList](p.Herald.CiliumV2alpha1().CiliumLoadBalancerIPPools(), ""),
			example:   &v2alpha1.CiliumLoadBalancerIPPool{},
			transform: tables.LBPoolFromK8s,
			versionOf: func(l *tables.LBPool) (string, string) { return l.Name, l.ResourceVersion },
		})
	}},
	tables.L2PoliciesTableName: {run: func(p params, _ string) {
		start(p, &reflector[*v2alpha1.CiliumL2AnnouncementPolicy, *tables.L2Policy]{
			name: "l2-policies", table: p.L2Policies,
			lw:        listWatch[*v2alpha1.CiliumL2AnnouncementPolicyList](p.Herald.CiliumV2alpha1().CiliumL2AnnouncementPolicies(), ""),
			example:   &v2alpha1.CiliumL2AnnouncementPolicy{},
			transform: tables.L2PolicyFromK8s,
		})
	}},
	// Every Node: which nodes a policy selects, routes to their pod CIDRs,
	// the CIDRs of Nodes that are gone, BGP's node selectors.
	tables.NodesTableName: {run: func(p params, _ string) {
		start(p, &reflector[*corev1.Node, *tables.Node]{
			name: "nodes", table: p.Nodes,
			lw:        listWatch[*corev1.NodeList](p.Kube.CoreV1().Nodes(), ""),
			example:   &corev1.Node{},
			transform: tables.NodeFromK8s,
			versionOf: func(n *tables.Node) (string, string) { return n.Name, n.ResourceVersion },
		})
	}},
	// The Leases of one namespace: one watch, whatever the number of
	// Services.
	tables.L2LeasesTableName: {namespaced: true, run: func(p params, ns string) {
		start(p, &reflector[*coordinationv1.Lease, *tables.L2Lease]{
			name: "l2-leases", table: p.L2Leases,
			lw:        listWatch[*coordinationv1.LeaseList](p.Kube.CoordinationV1().Leases(ns), ""),
			example:   &coordinationv1.Lease{},
			transform: tables.L2LeaseFromK8s,
		})
	}},
	tables.EndpointSlicesTableName: {namespaced: true, run: func(p params, ns string) {
		start(p, &reflector[*discoveryv1.EndpointSlice, *tables.EndpointSlice]{
			name: "endpoint-slices", table: p.EndpointSlices,
			lw:        listWatch[*discoveryv1.EndpointSliceList](p.Kube.DiscoveryV1().EndpointSlices(ns), ""),
			example:   &discoveryv1.EndpointSlice{},
			transform: tables.EndpointSliceFromK8s,
		})
	}},
	tables.PodIPPoolsTableName: {run: func(p params, _ string) {
		start(p, &reflector[*v2alpha1.CiliumPodIPPool, *tables.PodIPPool]{
			name: "pod-ip-pools", table: p.PodIPPools,
			lw:        listWatch[*v2alpha1.CiliumPodIPPoolList](p.Herald.CiliumV2alpha1().CiliumPodIPPools(), ""),
			example:   &v2alpha1.CiliumPodIPPool{},
			transform: tables.PodIPPoolFromK8s,
			versionOf: func(l *tables.PodIPPool) (string, string) { return l.Name, l.ResourceVersion },
		})
	}},
	tables.CiliumNodesTableName: {run: func(p params, _ string) {
		start(p, &reflector[*v2.CiliumNode, *tables.CiliumNode]{
			name: "cilium-nodes", table: p.CiliumNodes,
			lw:        listWatch[*v2.CiliumNodeList](p.Herald.CiliumV2().CiliumNodes(), ""),
			example:   &v2.CiliumNode{},
			transform: tables.CiliumNodeFromK8s,
			versionOf: func(n *tables.CiliumNode) (string, string) { return n.Name, n.ResourceVersion },
		})
	}},
	// Only the Pods scheduled to this node.
	tables.PodsTableName: {namespaced: true, run: func(p params, ns string) {
		start(p, &reflector[*corev1.Pod, *tables.Pod]{
			name: "pods", table: p.Pods,
			lw:        listWatch[*corev1.PodList](p.Kube.CoreV1().Pods(ns), fields.OneTermEqualSelector("spec.nodeName", p.Agent.Node()).String()),
			example:   &corev1.Pod{},
			transform: tables.PodFromK8s,
		})
	}},
	tables.NamespacesTableName: {run: func(p params, _ string) {
		start(p, &reflector[*corev1.Namespace, *tables.Namespace]{
			name: "namespaces", table: p.Namespaces,
			lw:        listWatch[*corev1.NamespaceList](p.Kube.CoreV1().Namespaces(), ""),
			example:   &corev1.Namespace{},
			transform: tables.NamespaceFromK8s,
		})
	}},
	tables.BGPClusterConfigsTableName: {run: func(p params, _ string) {
		start(p, &reflector[*v2alpha1.CiliumBGPClusterConfig, *tables.BGPClusterConfig]{
			name: "bgp-cluster-configs", table: p.BGPClusterConfig,
			lw:        listWatch[*v2alpha1.CiliumBGPClusterConfigList](p.Herald.CiliumV2alpha1().CiliumBGPClusterConfigs(), ""),
			example:   &v2alpha1.CiliumBGPClusterConfig{},
			transform: tables.BGPClusterConfigFromK8s,
		})
	}},
	tables.BGPPeerConfigsTableName: {run: func(p params, _ string) {
		start(p, &reflector[*v2alpha1.CiliumBGPPeerConfig, *tables.BGPPeerConfig]{
			name: "bgp-peer-configs", table: p.BGPPeerConfigs,
			lw:        listWatch[*v2alpha1.CiliumBGPPeerConfigList](p.Herald.CiliumV2alpha1().CiliumBGPPeerConfigs(), ""),
			example:   &v2alpha1.CiliumBGPPeerConfig{},
			transform: tables.BGPPeerConfigFromK8s,
		})
	}},
	tables.BGPAdvertisementsTableName: {run: func(p params, _ string) {
		start(p, &reflector[*v2alpha1.CiliumBGPAdvertisement, *tables.BGPAdvertisement]{
			name: "bgp-advertisements", table: p.BGPAdvertisement,
			lw:        listWatch[*v2alpha1.CiliumBGPAdvertisementList](p.Herald.CiliumV2alpha1().CiliumBGPAdvertisements(), ""),
			example:   &v2alpha1.CiliumBGPAdvertisement{},
			transform: tables.BGPAdvertisementFromK8s,
		})
	}},
	tables.BGPNodeOverridesTableName: {run: func(p params, _ string) {
		start(p, &reflector[*v2alpha1.CiliumBGPNodeConfigOverride, *tables.BGPNodeOverride]{
			name: "bgp-node-overrides", table: p.BGPNodeOverrides,
			lw:        listWatch[*v2alpha1.CiliumBGPNodeConfigOverrideList](p.Herald.CiliumV2alpha1().CiliumBGPNodeConfigOverrides(), ""),
			example:   &v2alpha1.CiliumBGPNodeConfigOverride{},
			transform: tables.BGPNodeOverrideFromK8s,
		})
	}},
	// Asked for in the BGP secrets namespace: the Role the chart gives the
	// agent allows no more.
	tables.BGPSecretsTableName: {namespaced: true, run: func(p params, ns string) {
		start(p, &reflector[*corev1.Secret, *tables.BGPSecret]{
			name: "bgp-secrets", table: p.BGPSecrets,
			lw:        listWatch[*corev1.SecretList](p.Kube.CoreV1().Secrets(ns), ""),
			example:   &corev1.Secret{},
			transform: tables.BGPSecretFromK8s,
		})
	}},
	// Only this node's CiliumBGPNodeConfig, which its agent writes.
	tables.BGPNodeConfigsTableName: {run: func(p params, _ string) {
		start(p, &reflector[*v2alpha1.CiliumBGPNodeConfig, *tables.BGPNodeConfig]{
			name: "bgp-node-configs", table: p.BGPNodeConfigs,
			lw:        listWatch[*v2alpha1.CiliumBGPNodeConfigList](p.Herald.CiliumV2alpha1().CiliumBGPNodeConfigs(), fields.OneTermEqualSelector("metadata.name", p.Agent.Node()).String()),
			example:   &v2alpha1.CiliumBGPNodeConfig{},
			transform: tables.BGPNodeConfigFromK8s,
		})
	}},
}
