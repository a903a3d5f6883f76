// Package k8swatch reflects the Kubernetes objects Herald acts on into
// statedb tables, so that every other cell reads tables, never the API.
//
// It watches only what the cells ask for (tables.Reflection, in the value
// group "reflections"): each cell asks for the objects it reads, while its
// feature is on. So LB IPAM alone watches Services and
// CiliumLoadBalancerIPPools, and a feature that is off costs no watch. The
// agent logs the tables it reflects at start ("Reflecting Kubernetes
// objects").
//
// It defines the kinds several features read (Services, Nodes,
// EndpointSlices, CiliumPodIPPools, CiliumNodes,
// CiliumLoadBalancerIPPools; writes their tables), and
// runs the reflectors of the kinds the features define themselves
// (k8sreflect.Kind, in the value group "k8s-kinds").
// Provides: tables.Freshness, with which a new leader waits until a table
// holds at least what the API server holds.
package k8swatch

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"k8s-watch",
	"Reflects Kubernetes objects into tables",

	cell.ProvidePrivate(
		tables.NewServicesTable, tables.NewNodesTable, tables.NewEndpointSlicesTable,
		tables.NewPodIPPoolsTable, tables.NewCiliumNodesTable, tables.NewLBPoolsTable,
		newFreshness,
	),
	cell.Provide(
		(*freshness).provide,
		statedb.RWTable[*tables.Service].ToTable,
		statedb.RWTable[*tables.Node].ToTable,
		statedb.RWTable[*tables.EndpointSlice].ToTable,
		statedb.RWTable[*tables.PodIPPool].ToTable,
		statedb.RWTable[*tables.CiliumNode].ToTable,
		statedb.RWTable[*tables.LBPool].ToTable,
		serviceKind, nodeKind, endpointSliceKind, podIPPoolKind, ciliumNodeKind, lbPoolKind,
	),
	// Only what the cells ask for (tables.Reflection).
	cell.Invoke(reflectRequested),
)
