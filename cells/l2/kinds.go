package l2

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/cells/internal/k8sreflect"
	"github.com/heraldlb/herald/tables"
)

// kinds are the Kubernetes kinds only L2 announcements read: the ground
// floor reflects them into their tables while a cell asks for them.
var kinds = cell.Module(
	"l2-kinds",
	"Kubernetes kinds of L2 announcements",

	cell.ProvidePrivate(tables.NewL2PoliciesTable, tables.NewL2LeasesTable),
	cell.Provide(
		statedb.RWTable[*tables.L2Policy].ToTable, statedb.RWTable[*tables.L2Lease].ToTable,
		l2PolicyKind, l2LeaseKind,
	),
)

func l2PolicyKind(t statedb.RWTable[*tables.L2Policy]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*v2alpha1.CiliumL2AnnouncementPolicy, *tables.L2Policy]{
		Name: "l2-policies", Example: &v2alpha1.CiliumL2AnnouncementPolicy{},
		ListWatch: func(c k8sreflect.Clients, _ string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Herald.CiliumV2alpha1().CiliumL2AnnouncementPolicies(), "")
		},
		Transform: tables.L2PolicyFromK8s,
	})
}

// The Leases of one namespace: one watch, whatever the number of
// Services.
func l2LeaseKind(t statedb.RWTable[*tables.L2Lease]) k8sreflect.KindOut {
	return k8sreflect.Define(t, k8sreflect.Def[*coordinationv1.Lease, *tables.L2Lease]{
		Name: "l2-leases", Example: &coordinationv1.Lease{}, Namespaced: true,
		ListWatch: func(c k8sreflect.Clients, ns string) cache.ListerWatcher {
			return k8sreflect.ListWatch(c.Kube.CoordinationV1().Leases(ns), "")
		},
		Transform: tables.L2LeaseFromK8s,
	})
}
