package k8swatch

import (
	"context"
	"log/slog"

	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/daemon/agentconfig"
	"github.com/heraldlb/herald/tables"
)

func reflectServices(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.Service], kube kubernetes.Interface, log *slog.Logger) {
	svcs := kube.CoreV1().Services(metav1.NamespaceAll)
	(&reflector[*corev1.Service, *tables.Service]{
		name: "services", db: db, table: tbl, log: log,
		lw: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return svcs.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return svcs.Watch(ctx, o)
			},
		},
		example:   &corev1.Service{},
		transform: tables.ServiceFromK8s,
	}).register(jg)
}

func reflectPools(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.LBPool], herald versioned.Interface, log *slog.Logger) {
	pools := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	(&reflector[*v2alpha1.CiliumLoadBalancerIPPool, *tables.LBPool]{
		name: "lb-pools", db: db, table: tbl, log: log,
		lw: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return pools.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return pools.Watch(ctx, o)
			},
		},
		example:   &v2alpha1.CiliumLoadBalancerIPPool{},
		transform: tables.LBPoolFromK8s,
	}).register(jg)
}

func reflectL2Policies(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.L2Policy], herald versioned.Interface, agent agentconfig.Config, log *slog.Logger) {
	if !agent.EnableL2Announcements {
		return
	}
	policies := herald.CiliumV2alpha1().CiliumL2AnnouncementPolicies()
	(&reflector[*v2alpha1.CiliumL2AnnouncementPolicy, *tables.L2Policy]{
		name: "l2-policies", db: db, table: tbl, log: log,
		lw: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return policies.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return policies.Watch(ctx, o)
			},
		},
		example:   &v2alpha1.CiliumL2AnnouncementPolicy{},
		transform: tables.L2PolicyFromK8s,
	}).register(jg)
}

// reflectLocalNode watches only this agent's Node: its labels decide which
// L2 announcement policies this node takes part in.
func reflectLocalNode(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.Node], kube kubernetes.Interface, agent agentconfig.Config, log *slog.Logger) {
	if !agent.EnableL2Announcements {
		return
	}
	nodes := kube.CoreV1().Nodes()
	byName := fields.OneTermEqualSelector("metadata.name", agent.Node()).String()
	(&reflector[*corev1.Node, *tables.Node]{
		name: "nodes", db: db, table: tbl, log: log,
		lw: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = byName
				return nodes.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = byName
				return nodes.Watch(ctx, o)
			},
		},
		example:   &corev1.Node{},
		transform: tables.NodeFromK8s,
	}).register(jg)
}
