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
// bgp-peer-configs, bgp-advertisements, bgp-secrets, nodes,
// bgp-node-configs (to notice when someone else deleted or changed this
// node's CiliumBGPNodeConfig) and bgp-node-owners (which cluster config
// holds each node several select: ConflictingClusterConfig).
// Writes: tables bgp-resource-status (what each resource's conditions
// should say) and bgp-node-status (what this node's CiliumBGPNodeConfig
// is made of), and through their reconcilers CiliumBGPNodeConfig <node>
// (spec and status, at most one round every two seconds) and the status
// of CiliumBGPClusterConfigs, CiliumBGPPeerConfigs, CiliumBGPAdvertisements.
package status

import (
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"golang.org/x/time/rate"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"bgp-status",
	"Reports BGP sessions and resource problems in the API",

	cell.Provide(reflections),
	cell.ProvidePrivate(tables.NewBGPResourceStatusTable, tables.NewBGPNodeStatusTable),
	cell.Provide(
		statedb.RWTable[*tables.BGPResourceStatus].ToTable,
		statedb.RWTable[*tables.BGPNodeStatus].ToTable,
	),
	cell.Invoke(registerDerivations, registerReconcilers),
)

type reconcilerParams struct {
	cell.In

	Agent          agentconfig.Config
	BGP            bgpconfig.Config
	Reconcile      reconciler.Params
	Client         versioned.Interface
	ResourceStatus statedb.RWTable[*tables.BGPResourceStatus]
	NodeStatus     statedb.RWTable[*tables.BGPNodeStatus]
}

// registerReconcilers writes the two tables to the API server.
func registerReconcilers(p reconcilerParams) error {
	if !p.BGP.EnableBGPControlPlane {
		return nil
	}
	_, err := reconciler.Register(p.Reconcile, p.ResourceStatus,
		(*tables.BGPResourceStatus).Clone,
		(*tables.BGPResourceStatus).SetStatus,
		(*tables.BGPResourceStatus).GetStatus,
		&conditionWriter{client: p.Client, log: p.Reconcile.Log, now: time.Now}, nil,
		// A name each: the reconcile metrics tell the two apart by it
		// (bgp-status-conditions, bgp-status-node-config).
		reconciler.WithName("conditions"),
		reconciler.WithRetry(minWriteInterval, time.Minute),
	)
	if err != nil {
		return err
	}
	_, err = reconciler.Register(p.Reconcile, p.NodeStatus,
		(*tables.BGPNodeStatus).Clone,
		(*tables.BGPNodeStatus).SetStatus,
		(*tables.BGPNodeStatus).GetStatus,
		&nodeConfigWriter{client: p.Client, log: p.Reconcile.Log, name: p.Agent.Node(), report: p.BGP.EnableBGPControlPlaneStatusReport}, nil,
		reconciler.WithName("node-config"),
		reconciler.WithRetry(minWriteInterval, time.Minute),
		// Session counters change with every route: one round per
		// interval at most, with what changed meanwhile.
		reconciler.WithRoundLimits(1, rate.NewLimiter(rate.Every(minWriteInterval), 1)),
	)
	return err
}

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections(bgp bgpconfig.Config) tables.Reflections {
	if !bgp.EnableBGPControlPlane {
		return tables.Reflections{}
	}
	r := tables.Reflect(tables.NodesTableName, tables.BGPClusterConfigsTableName, tables.BGPPeerConfigsTableName, tables.BGPAdvertisementsTableName,
		tables.BGPNodeConfigsTableName, tables.BGPNodeOwnersTableName)
	r.Reflections = append(r.Reflections, tables.ReflectIn(tables.BGPSecretsTableName, bgp.BGPSecretsNamespace))
	return r
}
