// Package elector decides which node answers for each announced group of
// Services, and owns the timing and fencing contract of L2 announcements:
// until when this node may answer, which the responder's eBPF program
// enforces by itself.
//
// Two elections (l2-announcements-election):
//   - members (default): the agents watch each other over the member
//     protocol (hashicorp/memberlist, authenticated with a shared secret);
//     owners are placed by bounded-load consistent hashing over the live
//     candidates, so every agent computes the same ones without asking the
//     API server; the announcement Leases record the holders and are
//     written only when a group changes hands; each node's own Lease
//     (herald-l2-node-<node>) is the durable fence for a node alone.
//   - lease: a Lease election per group (the spec's Cilium behaviour).
//
// Reads: tables l2-candidates, nodes, devices, l2-leases, leadership.
// Writes: tables l2-announce, l2-lease-health, l2-members, l2-owners; the
// announcement Leases; Events.
package elector

import (
	"fmt"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// Config of the members election.
type Config struct {
	// L2AnnouncementsElection is how the node that answers for each
	// Service is chosen: "members" (node liveness between the agents,
	// owners placed by consistent hashing) or "lease" (a Lease election
	// per Service).
	L2AnnouncementsElection       string // l2-announcements-election
	L2AnnouncementsPeerPort       int    // l2-announcements-peer-port
	L2AnnouncementsPeerSecret     string // l2-announcements-peer-secret
	L2AnnouncementsPeerSecretFile string // l2-announcements-peer-secret-file
}

var defaultConfig = Config{L2AnnouncementsElection: L2ElectionMembers, L2AnnouncementsPeerPort: 7947, L2AnnouncementsPeerSecret: "herald-l2-peers"}

// L2 election modes (the l2-announcements-election key).
const (
	L2ElectionMembers = "members"
	L2ElectionLease   = "lease"
)

// runs reports whether the election of this mode runs.
func (c Config) runs(l2 l2config.Config, mode string) bool {
	return l2.EnableL2Announcements && c.L2AnnouncementsElection == mode
}

// validate stops the agent at start on a mode it does not run, whether
// L2 announcements are on or not.
func (c Config) validate() error {
	switch c.L2AnnouncementsElection {
	case L2ElectionMembers, L2ElectionLease:
		return nil
	}
	return fmt.Errorf("l2-announcements-election: %q is not %q (node liveness, consistent hashing) or %q (a Lease per Service)", c.L2AnnouncementsElection, L2ElectionMembers, L2ElectionLease)
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("l2-announcements-election", def.L2AnnouncementsElection, `How the node answering for each Service is chosen: "members" (the agents watch each other's liveness and place Services by consistent hashing; failover under a second, API writes only when owners change) or "lease" (a Lease election per Service)`)
	flags.Int("l2-announcements-peer-port", def.L2AnnouncementsPeerPort, "TCP and UDP port the agents watch each other's liveness on (members election), on the node's InternalIP")
	flags.String("l2-announcements-peer-secret", def.L2AnnouncementsPeerSecret, `Secret in --k8s-namespace whose key "secret" authenticates and encrypts the agents' peer traffic (members election); the first agent creates it with a random value when it is missing`)
	flags.String("l2-announcements-peer-secret-file", def.L2AnnouncementsPeerSecretFile, "File holding the peer secret instead of the Secret (at least 16 characters)")
}

var Cell = cell.Module(
	"l2-elector",
	"Decides which node answers for each announced IP",

	cell.Provide(reflections),
	cell.Config(defaultConfig),
	cell.Config(DefaultL2Leases),
	cell.Invoke(Config.validate),
	// The responder reconciles l2-announce entries and writes their status
	// back; l2-lease-health carries the fence deadline it enforces.
	cell.Provide(tables.NewL2AnnounceTable, statedb.RWTable[*tables.L2AnnounceEntry].ToTable),
	cell.ProvidePrivate(tables.NewL2LeaseHealthTable, tables.NewL2MembersTable, tables.NewL2OwnersTable),
	cell.Provide(
		statedb.RWTable[*tables.L2LeaseHealth].ToTable,
		statedb.RWTable[*tables.L2Member].ToTable,
		statedb.RWTable[*tables.L2Owner].ToTable,
		nodeLeaseElection,
	),
	cell.Invoke(registerAnnouncer, registerMembersElector, registerLeaseGC),
)

// nodeLeaseElection campaigns for this node's own Lease: the members
// election's durable fence (the only holder ever is this node). It
// campaigns as the node, not as the process, so that a restarted agent
// renews it at once: a second agent process on the node could not act on
// it alongside, as it cannot bind the member port the first one holds.
func nodeLeaseElection(agent agentconfig.Config, l2 l2config.Config, c Config, l L2Leases) (out struct {
	cell.Out
	Elections []tables.Election `group:"elections,flatten"`
}) {
	if c.runs(l2, L2ElectionMembers) {
		out.Elections = []tables.Election{{Lease: tables.L2NodeLeasePrefix + agent.Node(), Timings: electionTimings(l), Identity: agent.Node()}}
	}
	return out
}

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections(agent agentconfig.Config, l2 l2config.Config) tables.Reflections {
	if !l2.EnableL2Announcements {
		return tables.Reflections{}
	}
	r := tables.Reflect(tables.NodesTableName)
	r.Reflections = append(r.Reflections, tables.ReflectIn(tables.L2LeasesTableName, agent.K8sNamespace))
	return r
}
