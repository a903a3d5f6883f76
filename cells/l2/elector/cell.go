// Package elector is the members election of L2 announcements
// (l2-announcements-election: members, the default): it decides which
// node answers for each announced group of Services, and until when this
// node may answer, which the responder's eBPF program enforces by itself.
// The agents watch each other over the member protocol
// (hashicorp/memberlist, authenticated with a shared secret); owners are
// placed by bounded-load consistent hashing over the live candidates, so
// every agent computes the same ones without asking the API server; the
// announcement Leases record the holders and are written only when a
// group changes hands; each node's own Lease (herald-l2-node-<node>) is
// the durable fence for a node alone. The Lease election (the spec's
// Cilium behaviour) is cells/l2/leaseelection.
//
// Reads: tables l2-candidates, nodes, devices, l2-leases, leadership.
// Writes: tables l2-announce, l2-lease-health, l2-members, l2-owners; the
// announcement Leases; Events.
package elector

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// Config of the members election.
type Config struct {
	L2AnnouncementsPeerPort       int    // l2-announcements-peer-port
	L2AnnouncementsPeerSecret     string // l2-announcements-peer-secret
	L2AnnouncementsPeerSecretFile string // l2-announcements-peer-secret-file
}

var defaultConfig = Config{L2AnnouncementsPeerPort: 7947, L2AnnouncementsPeerSecret: "herald-l2-peers"}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.Int("l2-announcements-peer-port", def.L2AnnouncementsPeerPort, "TCP and UDP port the agents watch each other's liveness on (members election), on the node's InternalIP")
	flags.String("l2-announcements-peer-secret", def.L2AnnouncementsPeerSecret, `Secret in --k8s-namespace whose key "secret" authenticates and encrypts the agents' peer traffic (members election); the first agent creates it with a random value when it is missing`)
	flags.String("l2-announcements-peer-secret-file", def.L2AnnouncementsPeerSecretFile, "File holding the peer secret instead of the Secret (at least 16 characters)")
}

var Cell = cell.Module(
	"l2-elector",
	"Decides which node answers for each announced IP",

	cell.Provide(reflections),
	cell.Config(defaultConfig),
	cell.ProvidePrivate(tables.NewL2MembersTable, tables.NewL2OwnersTable),
	cell.Provide(
		statedb.RWTable[*tables.L2Member].ToTable,
		statedb.RWTable[*tables.L2Owner].ToTable,
		nodeLeaseElection,
	),
	cell.Invoke(registerMembersElector),
)

// nodeLeaseElection campaigns for this node's own Lease: the members
// election's durable fence (the only holder ever is this node). It
// campaigns as the node, not as the process, so that a restarted agent
// renews it at once: a second agent process on the node could not act on
// it alongside, as it cannot bind the member port the first one holds.
func nodeLeaseElection(agent agentconfig.Config, l2 l2config.Config, l l2config.L2Leases) (out struct {
	cell.Out
	Elections []tables.Election `group:"elections,flatten"`
}) {
	if l2.Runs(l2config.ElectionMembers) {
		out.Elections = []tables.Election{{Lease: tables.L2NodeLeasePrefix + agent.Node(), Timings: l.Timings(), Identity: agent.Node()}}
	}
	return out
}

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections(agent agentconfig.Config, l2 l2config.Config) tables.Reflections {
	if !l2.Runs(l2config.ElectionMembers) {
		return tables.Reflections{}
	}
	r := tables.Reflect(tables.NodesTableName)
	r.Reflections = append(r.Reflections, tables.ReflectIn(tables.L2LeasesTableName, agent.K8sNamespace))
	return r
}
