package lbipam

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"k8s.io/client-go/tools/cache"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/cells/internal/k8sreflect"
	"github.com/heraldlb/herald/tables"
)

// kinds are the Kubernetes kinds only LB IPAM reads: the ground floor
// reflects them into their tables while a cell asks for them.
var kinds = cell.Module(
	"lbipam-kinds",
	"Kubernetes kinds of LB IPAM",

	cell.ProvidePrivate(tables.NewLBPoolsTable),
	cell.Provide(statedb.RWTable[*tables.LBPool].ToTable, lbPoolKind),
)

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
