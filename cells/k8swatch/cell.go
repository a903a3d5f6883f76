// Package k8swatch reflects the Kubernetes objects Herald acts on into
// statedb tables, so that every other cell reads tables, never the API.
//
// Reads: Services (all namespaces), CiliumLoadBalancerIPPools.
// Writes: tables services and lb-pools.
package k8swatch

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"k8s-watch",
	"Reflects Kubernetes objects into tables",

	cell.ProvidePrivate(tables.NewServicesTable, tables.NewLBPoolsTable),
	cell.Provide(
		statedb.RWTable[*tables.Service].ToTable,
		statedb.RWTable[*tables.LBPool].ToTable,
	),
	cell.Invoke(reflectServices, reflectPools),
)
