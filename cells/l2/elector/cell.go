// Package elector is the members election of L2 announcements
// (l2-announcements-election: members, the default): it decides which
// node answers for each announced group of Services, and until when this
// node may answer, which the responder's eBPF program enforces by itself.
// The agents watch each other over the member protocol, which the members
// cell (cells/l2/members) runs and shows in tables: this cell reads who is
// alive and what each published, and until when the peers confirm this
// node, and writes what the peers must learn of this node (its term, its
// unrecorded takeovers) for the members cell to publish. Owners are
// placed by bounded-load consistent hashing over the live candidates, so
// every agent computes the same ones without asking the API server; the
// announcement Leases record the holders and are written only when a
// group changes hands; each node's own Lease (herald-l2-node-<node>) is
// the durable fence for a node alone. The Lease election (the spec's
// Cilium behaviour) is cells/l2/leaseelection.
//
// Reads: tables l2-candidates, l2-members, l2-member-confirmation,
// l2-leases, leadership.
// Writes: tables l2-announce, l2-lease-health, l2-owners, l2-member-meta
// (and there, when the agent stops, that this node is silent); the
// announcement Leases, takeover records (herald-l2-takeover-<node>-<term>)
// and, in two-node clusters, witness records (herald-l2-witness-<node>);
// Events. Its node Lease it asks of the ground floor's election
// (tables.Election).
package elector

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"l2-elector",
	"Decides which node answers for each announced IP",

	cell.Provide(reflections),
	cell.ProvidePrivate(tables.NewL2OwnersTable, tables.NewL2MemberMetaTable),
	cell.Provide(
		statedb.RWTable[*tables.L2Owner].ToTable,
		statedb.RWTable[*tables.L2MemberMeta].ToTable,
		nodeLeaseElection,
	),
	cell.Invoke(registerMembersElector),
)

// nodeLeaseElection campaigns for this node's own Lease: the members
// election's durable fence (the only holder ever is this node). It
// campaigns as the node, not as the process, so that a restarted agent
// renews it at once: a second agent process on the node could not act on
// it alongside, as it cannot bind the member port the first one holds,
// and its elector waits for the member protocol (l2-members initialized).
// The options are checked first: the election cell runs before the
// elector's own check, and would report a renew deadline derived from them
// (possibly negative) under the Lease's name instead of the options.
func nodeLeaseElection(agent agentconfig.Config, l2 l2config.Config, l l2config.L2Leases) (out struct {
	cell.Out
	Elections []tables.Election `group:"elections,flatten"`
}, err error) {
	if l2.Runs(l2config.ElectionMembers) {
		if err := l.Validate(); err != nil {
			return out, err
		}
		out.Elections = []tables.Election{{Lease: tables.L2NodeLeasePrefix + agent.Node(), Timings: l.Timings(), Identity: agent.Node(),
			OwnerNode: agent.Node()}}
	}
	return out, nil
}

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections(agent agentconfig.Config, l2 l2config.Config) tables.Reflections {
	if !l2.Runs(l2config.ElectionMembers) {
		return tables.Reflections{}
	}
	return tables.Reflections{Reflections: []tables.Reflection{tables.ReflectIn(tables.L2LeasesTableName, agent.K8sNamespace)}}
}
