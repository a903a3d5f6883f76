// Package desired derives what this node's BGP speaker should be: the
// instances and peers the BGP resources give the node (table
// bgp-instances) and every route it advertises to each peer, with its
// attributes and the reasons (table bgp-routes). A Service with no ready
// endpoint anywhere is not advertised, unless
// enable-no-service-endpoints-routable. Pure derivation (derive);
// the bgp-speaker cell makes GoBGP match the tables.
//
// Reads: tables nodes, bgp-cluster-configs, bgp-peer-configs,
// bgp-advertisements, bgp-node-overrides, bgp-secrets, services,
// endpoint-slices, bgp-default-gateways and bgp-link-neighbors (peers
// found by autoDiscovery), bgp-node-configs and bgp-node-owners (which
// cluster config each node runs, when several select it),
// devices (router IDs of IPv6-only nodes, Interface advertisements);
// with multi-pool IPAM pod-ip-pools and cilium-nodes.
// Writes: tables bgp-instances, bgp-routes; Events (BGPNotAdvertised, on a
// Service withdrawn for having no ready endpoint).
package desired

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"bgp-desired",
	"Derives the BGP instances and routes of this node",

	cell.Provide(reflections),
	cell.ProvidePrivate(tables.NewBGPInstancesTable, tables.NewBGPRoutesTable),
	cell.Provide(
		statedb.RWTable[*tables.BGPInstance].ToTable,
		statedb.RWTable[*tables.BGPRoute].ToTable,
	),
	cell.Invoke(registerDerivation),
)

// reflections asks the ground floor for the Kubernetes objects this cell
// reads; the pod IP pools and CiliumNodes only with multi-pool IPAM, whose
// pod CIDRs it advertises.
func reflections(bgp bgpconfig.Config, agent agentconfig.Config) tables.Reflections {
	if !bgp.EnableBGPControlPlane {
		return tables.Reflections{}
	}
	r := tables.Reflect(tables.ServicesTableName, tables.NodesTableName, tables.EndpointSlicesTableName,
		tables.BGPClusterConfigsTableName, tables.BGPPeerConfigsTableName, tables.BGPAdvertisementsTableName,
		tables.BGPNodeOverridesTableName, tables.BGPNodeConfigsTableName, tables.BGPNodeOwnersTableName)
	r.Reflections = append(r.Reflections, tables.ReflectIn(tables.BGPSecretsTableName, bgp.BGPSecretsNamespace))
	if agent.MultiPool() {
		r.Reflections = append(r.Reflections, tables.Reflect(tables.PodIPPoolsTableName, tables.CiliumNodesTableName).Reflections...)
	}
	return r
}
