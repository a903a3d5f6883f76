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
// Writes: the tables services, lb-pools, l2-policies, nodes,
// endpoint-slices, pod-ip-pools, cilium-nodes, pods (this node's),
// namespaces, l2-leases, bgp-cluster-configs, bgp-peer-configs,
// bgp-advertisements, bgp-node-overrides, bgp-secrets and bgp-node-configs
// (this node's).
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
		tables.NewServicesTable, tables.NewLBPoolsTable, tables.NewL2PoliciesTable, tables.NewNodesTable, tables.NewEndpointSlicesTable,
		tables.NewPodIPPoolsTable, tables.NewCiliumNodesTable, tables.NewPodsTable, tables.NewNamespacesTable,
		tables.NewL2LeasesTable,
		tables.NewBGPClusterConfigsTable, tables.NewBGPPeerConfigsTable, tables.NewBGPAdvertisementsTable,
		tables.NewBGPNodeOverridesTable, tables.NewBGPSecretsTable, tables.NewBGPNodeConfigsTable,
		newFreshness,
	),
	cell.Provide(
		(*freshness).provide,
		statedb.RWTable[*tables.Service].ToTable,
		statedb.RWTable[*tables.LBPool].ToTable,
		statedb.RWTable[*tables.L2Policy].ToTable,
		statedb.RWTable[*tables.Node].ToTable,
		statedb.RWTable[*tables.EndpointSlice].ToTable,
		statedb.RWTable[*tables.PodIPPool].ToTable,
		statedb.RWTable[*tables.CiliumNode].ToTable,
		statedb.RWTable[*tables.Pod].ToTable,
		statedb.RWTable[*tables.Namespace].ToTable,
		statedb.RWTable[*tables.L2Lease].ToTable,
		statedb.RWTable[*tables.BGPClusterConfig].ToTable,
		statedb.RWTable[*tables.BGPPeerConfig].ToTable,
		statedb.RWTable[*tables.BGPAdvertisement].ToTable,
		statedb.RWTable[*tables.BGPNodeOverride].ToTable,
		statedb.RWTable[*tables.BGPSecret].ToTable,
		statedb.RWTable[*tables.BGPNodeConfig].ToTable,
	),
	// Only what the cells ask for (tables.Reflection).
	cell.Invoke(reflectRequested),
)
