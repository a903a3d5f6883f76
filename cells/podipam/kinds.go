package podipam

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/heraldlb/herald/cells/internal/k8sreflect"
	"github.com/heraldlb/herald/tables"
)

// kinds are the Kubernetes kinds only pod IPAM reads: the ground floor
// reflects them into their tables while a cell asks for them. The pools
// and CiliumNodes, which BGP reads too, are the ground floor's.
var kinds = cell.Module(
	"podipam-kinds",
	"Kubernetes kinds of multi-pool pod IPAM",

	cell.ProvidePrivate(tables.NewPodsTable, tables.NewNamespacesTable),
	cell.Provide(
		statedb.RWTable[*tables.Pod].ToTable, statedb.RWTable[*tables.Namespace].ToTable,
		podKind, namespaceKind,
	),
)

// Only the Pods scheduled to this node.
func podKind(t statedb.RWTable[*tables.Pod]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*corev1.Pod, *tables.Pod]{
		Name: "pods", Example: &corev1.Pod{}, Namespaced: true,
		ListWatch: func(c k8sreflect.Clients, ns string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Kube.CoreV1().Pods(ns), fields.OneTermEqualSelector("spec.nodeName", c.Node).String())
		},
		Transform: tables.PodFromK8s,
	})
}

func namespaceKind(t statedb.RWTable[*tables.Namespace]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*corev1.Namespace, *tables.Namespace]{
		Name: "namespaces", Example: &corev1.Namespace{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Kube.CoreV1().Namespaces(), "")
		},
		Transform: tables.NamespaceFromK8s,
	})
}
