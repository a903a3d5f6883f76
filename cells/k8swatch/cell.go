// Package k8swatch reflects the Kubernetes objects Herald acts on into
// statedb tables, so that every other cell reads tables, never the API.
//
// Reads: Services (all namespaces), CiliumLoadBalancerIPPools and, with
// L2 announcements on, CiliumL2AnnouncementPolicies and this agent's Node.
// Writes: tables services, lb-pools, l2-policies and nodes.
// Provides: tables.Freshness, with which a new leader waits until services
// and lb-pools hold at least what the API server holds.
package k8swatch

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"k8s-watch",
	"Reflects Kubernetes objects into tables",

	cell.ProvidePrivate(tables.NewServicesTable, tables.NewLBPoolsTable, tables.NewL2PoliciesTable, tables.NewNodesTable, newFreshness),
	cell.Provide(
		(*freshness).provide,
		statedb.RWTable[*tables.Service].ToTable,
		statedb.RWTable[*tables.LBPool].ToTable,
		statedb.RWTable[*tables.L2Policy].ToTable,
		statedb.RWTable[*tables.Node].ToTable,
	),
	cell.Invoke(reflectServices, reflectPools, reflectL2Policies, reflectLocalNode),
)
