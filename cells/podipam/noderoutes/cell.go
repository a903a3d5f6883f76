// Package noderoutes routes other nodes' pod CIDRs through those nodes
// (auto-direct-node-routes): with multi-pool IPAM, each node's pods live in
// the node's CIDRs, and nodes on one L2 segment reach each other's pods by
// sending to the node.
//
// Reads: tables cilium-nodes and nodes.
// Writes: table node-routes, and the kernel's routes with protocol 196
// (a statedb reconciler; only routes of that protocol are touched).
package noderoutes

import (
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// Config of node routes.
type Config struct {
	AutoDirectNodeRoutes bool // auto-direct-node-routes
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.Bool("auto-direct-node-routes", def.AutoDirectNodeRoutes,
		"With multi-pool IPAM, route every other node's pod CIDRs through that node's InternalIP (nodes on one L2 segment)")
}

var Cell = cell.Module(
	"node-routes",
	"Routes to the pod CIDRs of other nodes",

	cell.Provide(reflections),
	cell.Config(Config{}),
	cell.ProvidePrivate(tables.NewNodeRoutesTable),
	cell.Provide(statedb.RWTable[*tables.NodeRoute].ToTable),
	cell.Invoke(register),
)

type params struct {
	cell.In

	Config      Config
	Agent       agentconfig.Config
	Reconcile   reconciler.Params
	Routes      statedb.RWTable[*tables.NodeRoute]
	CiliumNodes statedb.Table[*tables.CiliumNode]
	Nodes       statedb.Table[*tables.Node]
}

func register(p params) error {
	if !p.Config.AutoDirectNodeRoutes || !p.Agent.MultiPool() {
		return nil
	}
	d := &deriver{params: p, self: p.Agent.Node(), log: p.Reconcile.Log}
	p.Reconcile.JobGroup.Add(d.job())
	_, err := reconciler.Register(p.Reconcile, p.Routes,
		(*tables.NodeRoute).Clone, (*tables.NodeRoute).SetStatus, (*tables.NodeRoute).GetStatus,
		&routeOps{log: p.Reconcile.Log}, nil,
		reconciler.WithRetry(time.Second, time.Minute),
		// Refresh puts back a route someone deleted by hand; prune removes
		// routes of nodes that went while the agent was down.
		reconciler.WithRefreshing(5*time.Minute, nil),
		reconciler.WithPruning(5*time.Minute),
	)
	return err
}

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections(agent agentconfig.Config) tables.Reflections {
	if !agent.MultiPool() {
		return tables.Reflections{}
	}
	return tables.Reflect(tables.CiliumNodesTableName, tables.NodesTableName)
}
