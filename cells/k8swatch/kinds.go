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

// reflectLocalNode watches only this agent's Node: its labels decide which
// L2 announcement policies this node takes part in.
func reflectLocalNode(jg job.Group, db *statedb.DB, tbl statedb.RWTable[*tables.Node], kube kubernetes.Interface, agent agentconfig.Config, log *slog.Logger) {
	if !agent.EnableL2Announcements {
		return
	}
	(&reflector[*corev1.Node, *tables.Node]{
		name: "nodes", db: db, table: tbl, log: log,
		lw:        listWatch[*corev1.NodeList](kube.CoreV1().Nodes(), fields.OneTermEqualSelector("metadata.name", agent.Node()).String()),
		example:   &corev1.Node{},
		transform: tables.NodeFromK8s,
	}).register(jg, nil)
}
