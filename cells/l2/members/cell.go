// Package members is the member protocol of the members election of L2
// announcements (l2-announcements-election: members, the default): the
// agents watch each other's liveness over hashicorp/memberlist (SWIM with
// Lifeguard), on the peer port at each Node's first InternalIP,
// authenticated and encrypted with a shared peer secret (a file, or a
// Secret the first agent creates). It confirms, by echoes to its peers,
// that this node is alive in their view, and publishes to them what the
// elector (cells/l2/elector) decides they must know: its term and the
// groups it took over without recording it, with this node's selected
// devices. When the agent stops it leaves the members, after the elector
// stopped answering (cells/l2 orders them).
//
// Reads: tables nodes (this node's address, the peers to join), devices,
// l2-member-meta (what the elector publishes, and that it is silent).
// Writes: tables l2-members (every member as the failure detector sees
// it, with what it published) and l2-member-confirmation (until when the
// peers confirm this node); the peer Secret when it is missing.
package members

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// Config of the member protocol.
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
	"l2-members",
	"Watches the liveness of the other agents and confirms this node",

	cell.Provide(reflections),
	cell.Config(defaultConfig),
	// Provided whatever the election: the candidates read l2-members (it
	// stays empty with the Lease election).
	cell.ProvidePrivate(tables.NewL2MembersTable, tables.NewL2MemberConfirmationTable),
	cell.Provide(
		statedb.RWTable[*tables.L2Member].ToTable,
		statedb.RWTable[*tables.L2MemberConfirmation].ToTable,
	),
	cell.Invoke(registerMembers),
)

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections(l2 l2config.Config) tables.Reflections {
	if !l2.Runs(l2config.ElectionMembers) {
		return tables.Reflections{}
	}
	return tables.Reflect(tables.NodesTableName)
}
