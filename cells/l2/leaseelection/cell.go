// Package leaseelection is the Lease election of L2 announcements
// (l2-announcements-election: lease), as Cilium runs it: one Lease per
// group of Services (cilium-l2announce-<namespace>-<name>), campaigned
// for by every node that may announce the group, renewed by its holder.
// The holder answers while its term is fresh, and gives the Lease up
// when its Services go or the agent stops, once the responder has their
// IPs out (leaving.go). Abandoned Leases are deleted once a minute; with
// L2 announcements off, every L2 Lease an earlier run left (announcement,
// node and witness Leases), until none is left (leasegc.go).
//
// Reads: tables l2-candidates; asks for l2-leases only so that herald-dbg
// shows the holders.
// Writes: the announcement Leases; tables l2-announce and
// l2-lease-health (the deadline its terms allow); Events.
package leaseelection

import (
	"log/slog"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"l2-lease-election",
	"Chooses the node that answers for each group by a Lease per group",

	cell.Provide(reflections),
	cell.Invoke(registerAnnouncer, registerLeaseGC),
)

// reflections asks the ground floor for the Leases of the agents'
// namespace, where the holders show (herald-dbg statedb l2-leases).
func reflections(agent agentconfig.Config, l2 l2config.Config) tables.Reflections {
	if !l2.Runs(l2config.ElectionLease) {
		return tables.Reflections{}
	}
	return tables.Reflections{Reflections: []tables.Reflection{tables.ReflectIn(tables.L2LeasesTableName, agent.K8sNamespace)}}
}

// params are what the election reads and writes.
type params struct {
	cell.In

	Agent      agentconfig.Config
	L2         l2config.Config
	Leases     l2config.L2Leases
	Log        *slog.Logger
	DB         *statedb.DB
	Jobs       job.Group
	Kube       kubernetes.Interface
	Candidates statedb.Table[*tables.L2Candidate]
	Announce   statedb.RWTable[*tables.L2AnnounceEntry]
	Health     statedb.RWTable[*tables.L2LeaseHealth]
	Events     record.EventRecorder
	Metrics    prometheus.Registerer `optional:"true"`
}
