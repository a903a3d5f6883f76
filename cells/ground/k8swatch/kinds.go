package k8swatch

import (
	"context"
	"log/slog"

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
	"github.com/heraldlb/herald/daemon/agentconfig"
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

func reflectServices(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.Service], kube kubernetes.Interface, fresh *freshness, log *slog.Logger) {
	(&reflector[*corev1.Service, *tables.Service]{
		name: "services", db: db, table: tbl, log: log,
		lw:        listWatch[*corev1.ServiceList](kube.CoreV1().Services(metav1.NamespaceAll), ""),
		example:   &corev1.Service{},
		transform: tables.ServiceFromK8s,
		versionOf: func(s *tables.Service) (string, string) { return s.Key(), s.ResourceVersion },
	}).register(jg, fresh)
}

func reflectPools(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.LBPool], herald versioned.Interface, fresh *freshness, log *slog.Logger) {
	(&reflector[*v2alpha1.CiliumLoadBalancerIPPool, *tables.LBPool]{
		name: "lb-pools", db: db, table: tbl, log: log,
		lw:        listWatch[*v2alpha1.CiliumLoadBalancerIPPoolList](herald.CiliumV2alpha1().CiliumLoadBalancerIPPools(), ""),
		example:   &v2alpha1.CiliumLoadBalancerIPPool{},
		transform: tables.LBPoolFromK8s,
		versionOf: func(p *tables.LBPool) (string, string) { return p.Name, p.ResourceVersion },
	}).register(jg, fresh)
}

func reflectL2Policies(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.L2Policy], herald versioned.Interface, agent agentconfig.Config, log *slog.Logger) {
	if !agent.EnableL2Announcements {
		return
	}
	(&reflector[*v2alpha1.CiliumL2AnnouncementPolicy, *tables.L2Policy]{
		name: "l2-policies", db: db, table: tbl, log: log,
		lw:        listWatch[*v2alpha1.CiliumL2AnnouncementPolicyList](herald.CiliumV2alpha1().CiliumL2AnnouncementPolicies(), ""),
		example:   &v2alpha1.CiliumL2AnnouncementPolicy{},
		transform: tables.L2PolicyFromK8s,
	}).register(jg, nil)
}

// reflectNodes watches every Node: with L2 announcements, their labels say
// which nodes a policy selects (this agent's own decide which policies it
// takes part in; all of them, which node reports a Service nobody can
// announce); with multi-pool IPAM, routes to their pod CIDRs, and the
// allocator releases the CIDRs of Nodes that are gone.
func reflectNodes(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.Node], kube kubernetes.Interface, agent agentconfig.Config, fresh *freshness, log *slog.Logger) {
	if !agent.EnableL2Announcements && !agent.MultiPool() && !agent.EnableBGPControlPlane {
		return
	}
	(&reflector[*corev1.Node, *tables.Node]{
		name: "nodes", db: db, table: tbl, log: log,
		lw:        listWatch[*corev1.NodeList](kube.CoreV1().Nodes(), ""),
		example:   &corev1.Node{},
		transform: tables.NodeFromK8s,
		versionOf: func(n *tables.Node) (string, string) { return n.Name, n.ResourceVersion },
	}).register(jg, fresh)
}

// reflectL2Leases watches the Leases of the agents' namespace with L2
// announcements on: who holds each announced group, and the nodes' liveness
// Leases. One watch, whatever the number of Services.
func reflectL2Leases(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.L2Lease], kube kubernetes.Interface, agent agentconfig.Config, log *slog.Logger) {
	if !agent.EnableL2Announcements {
		return
	}
	(&reflector[*coordinationv1.Lease, *tables.L2Lease]{
		name: "l2-leases", db: db, table: tbl, log: log,
		lw:        listWatch[*coordinationv1.LeaseList](kube.CoordinationV1().Leases(agent.K8sNamespace), ""),
		example:   &coordinationv1.Lease{},
		transform: tables.L2LeaseFromK8s,
	}).register(jg, nil)
}

// reflectEndpointSlices watches the EndpointSlices with L2 announcements
// or BGP on: a Service with externalTrafficPolicy: Local is announced or
// advertised only from a node that runs one of its ready endpoints.
func reflectEndpointSlices(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.EndpointSlice], kube kubernetes.Interface, agent agentconfig.Config, log *slog.Logger) {
	if !agent.EnableL2Announcements && !agent.EnableBGPControlPlane {
		return
	}
	(&reflector[*discoveryv1.EndpointSlice, *tables.EndpointSlice]{
		name: "endpoint-slices", db: db, table: tbl, log: log,
		lw:        listWatch[*discoveryv1.EndpointSliceList](kube.DiscoveryV1().EndpointSlices(metav1.NamespaceAll), ""),
		example:   &discoveryv1.EndpointSlice{},
		transform: tables.EndpointSliceFromK8s,
	}).register(jg, nil)
}

// The kinds of multi-pool IPAM.

func reflectPodIPPools(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.PodIPPool], herald versioned.Interface, agent agentconfig.Config, fresh *freshness, log *slog.Logger) {
	if !agent.MultiPool() {
		return
	}
	(&reflector[*v2alpha1.CiliumPodIPPool, *tables.PodIPPool]{
		name: "pod-ip-pools", db: db, table: tbl, log: log,
		lw:        listWatch[*v2alpha1.CiliumPodIPPoolList](herald.CiliumV2alpha1().CiliumPodIPPools(), ""),
		example:   &v2alpha1.CiliumPodIPPool{},
		transform: tables.PodIPPoolFromK8s,
		versionOf: func(p *tables.PodIPPool) (string, string) { return p.Name, p.ResourceVersion },
	}).register(jg, fresh)
}

func reflectCiliumNodes(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.CiliumNode], herald versioned.Interface, agent agentconfig.Config, fresh *freshness, log *slog.Logger) {
	if !agent.MultiPool() {
		return
	}
	(&reflector[*v2.CiliumNode, *tables.CiliumNode]{
		name: "cilium-nodes", db: db, table: tbl, log: log,
		lw:        listWatch[*v2.CiliumNodeList](herald.CiliumV2().CiliumNodes(), ""),
		example:   &v2.CiliumNode{},
		transform: tables.CiliumNodeFromK8s,
		versionOf: func(n *tables.CiliumNode) (string, string) { return n.Name, n.ResourceVersion },
	}).register(jg, fresh)
}

// reflectLocalPods watches the Pods scheduled to this node only.
func reflectLocalPods(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.Pod], kube kubernetes.Interface, agent agentconfig.Config, log *slog.Logger) {
	if !agent.MultiPool() {
		return
	}
	(&reflector[*corev1.Pod, *tables.Pod]{
		name: "pods", db: db, table: tbl, log: log,
		lw:        listWatch[*corev1.PodList](kube.CoreV1().Pods(metav1.NamespaceAll), fields.OneTermEqualSelector("spec.nodeName", agent.Node()).String()),
		example:   &corev1.Pod{},
		transform: tables.PodFromK8s,
	}).register(jg, nil)
}

func reflectNamespaces(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.Namespace], kube kubernetes.Interface, agent agentconfig.Config, log *slog.Logger) {
	if !agent.MultiPool() {
		return
	}
	(&reflector[*corev1.Namespace, *tables.Namespace]{
		name: "namespaces", db: db, table: tbl, log: log,
		lw:        listWatch[*corev1.NamespaceList](kube.CoreV1().Namespaces(), ""),
		example:   &corev1.Namespace{},
		transform: tables.NamespaceFromK8s,
	}).register(jg, nil)
}

// The kinds of the BGP control plane.

func reflectBGP(jg job.Group, db *statedb.DB, herald versioned.Interface, kube kubernetes.Interface, agent agentconfig.Config, log *slog.Logger,
	ccs statedb.RWTable[*tables.BGPClusterConfig], pcs statedb.RWTable[*tables.BGPPeerConfig],
	advs statedb.RWTable[*tables.BGPAdvertisement], ovs statedb.RWTable[*tables.BGPNodeOverride], secrets statedb.RWTable[*tables.BGPSecret],
	nodeConfigs statedb.RWTable[*tables.BGPNodeConfig]) {
	if !agent.EnableBGPControlPlane {
		return
	}
	c := herald.CiliumV2alpha1()
	(&reflector[*v2alpha1.CiliumBGPClusterConfig, *tables.BGPClusterConfig]{
		name: "bgp-cluster-configs", db: db, table: ccs, log: log,
		lw:        listWatch[*v2alpha1.CiliumBGPClusterConfigList](c.CiliumBGPClusterConfigs(), ""),
		example:   &v2alpha1.CiliumBGPClusterConfig{},
		transform: tables.BGPClusterConfigFromK8s,
	}).register(jg, nil)
	(&reflector[*v2alpha1.CiliumBGPPeerConfig, *tables.BGPPeerConfig]{
		name: "bgp-peer-configs", db: db, table: pcs, log: log,
		lw:        listWatch[*v2alpha1.CiliumBGPPeerConfigList](c.CiliumBGPPeerConfigs(), ""),
		example:   &v2alpha1.CiliumBGPPeerConfig{},
		transform: tables.BGPPeerConfigFromK8s,
	}).register(jg, nil)
	(&reflector[*v2alpha1.CiliumBGPAdvertisement, *tables.BGPAdvertisement]{
		name: "bgp-advertisements", db: db, table: advs, log: log,
		lw:        listWatch[*v2alpha1.CiliumBGPAdvertisementList](c.CiliumBGPAdvertisements(), ""),
		example:   &v2alpha1.CiliumBGPAdvertisement{},
		transform: tables.BGPAdvertisementFromK8s,
	}).register(jg, nil)
	(&reflector[*v2alpha1.CiliumBGPNodeConfigOverride, *tables.BGPNodeOverride]{
		name: "bgp-node-overrides", db: db, table: ovs, log: log,
		lw:        listWatch[*v2alpha1.CiliumBGPNodeConfigOverrideList](c.CiliumBGPNodeConfigOverrides(), ""),
		example:   &v2alpha1.CiliumBGPNodeConfigOverride{},
		transform: tables.BGPNodeOverrideFromK8s,
	}).register(jg, nil)
	// Only the Secrets of the BGP secrets namespace (the Role the chart
	// gives the agent allows no more).
	(&reflector[*corev1.Secret, *tables.BGPSecret]{
		name: "bgp-secrets", db: db, table: secrets, log: log,
		lw:        listWatch[*corev1.SecretList](kube.CoreV1().Secrets(agent.BGPSecretsNamespace), ""),
		example:   &corev1.Secret{},
		transform: tables.BGPSecretFromK8s,
	}).register(jg, nil)
	// Only this node's CiliumBGPNodeConfig, which its agent writes.
	(&reflector[*v2alpha1.CiliumBGPNodeConfig, *tables.BGPNodeConfig]{
		name: "bgp-node-configs", db: db, table: nodeConfigs, log: log,
		lw:        listWatch[*v2alpha1.CiliumBGPNodeConfigList](c.CiliumBGPNodeConfigs(), fields.OneTermEqualSelector("metadata.name", agent.Node()).String()),
		example:   &v2alpha1.CiliumBGPNodeConfig{},
		transform: tables.BGPNodeConfigFromK8s,
	}).register(jg, nil)
}
