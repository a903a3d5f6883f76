// Package status reports the BGP control plane in the API: this node's
// CiliumBGPNodeConfig (its instances and peers, every session's state, and
// conditions saying what does not run and why), and the conditions of the
// cluster-wide resources (cilium.io/NoMatchingNode, MissingPeerConfigs,
// ConflictingClusterConfig, MissingAuthSecret, InvalidSpec). Every agent
// computes the same conditions for the cluster-wide resources and writes
// only when they differ from what the object shows, so the first write
// settles them for all.
//
// Reads: tables bgp-instances, bgp-peers, bgp-cluster-configs,
// bgp-peer-configs, bgp-advertisements, bgp-secrets, nodes, and
// bgp-node-configs (to notice when someone else deleted or changed this
// node's CiliumBGPNodeConfig).
// Writes: CiliumBGPNodeConfig <node> (spec and status); the status of
// CiliumBGPClusterConfigs, CiliumBGPPeerConfigs, CiliumBGPAdvertisements.
package status

import (
	"github.com/cilium/hive/cell"

	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"bgp-status",
	"Reports BGP sessions and resource problems in the API",

	cell.Provide(reflections),
	cell.Invoke(registerNodeConfigWriter, registerConditionWriter),
)

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections(bgp bgpconfig.Config) tables.Reflections {
	if !bgp.EnableBGPControlPlane {
		return tables.Reflections{}
	}
	r := tables.Reflect(tables.NodesTableName, tables.BGPClusterConfigsTableName, tables.BGPPeerConfigsTableName, tables.BGPAdvertisementsTableName, tables.BGPNodeConfigsTableName)
	r.Reflections = append(r.Reflections, tables.ReflectIn(tables.BGPSecretsTableName, bgp.BGPSecretsNamespace))
	return r
}
