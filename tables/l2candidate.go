package tables

import (
	"net/netip"
	"strings"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// L2CandidatesTableName is the table of what may be announced and by whom:
// one row per group of Services that must be answered for by one node.
const L2CandidatesTableName = "l2-candidates"

// L2AnnounceLeasePrefix starts the name of every announcement Lease,
// cilium-l2announce-<namespace>-<name> (the spec's names).
const L2AnnounceLeasePrefix = "cilium-l2announce-"

// L2Candidate is one group of Services that share their IPs (directly or
// through each other), the nodes the L2 announcement policies allow to
// answer for them, and what this node would program if it owned them.
// Every agent derives the same rows, except Local.
type L2Candidate struct {
	// Group names the group after its first Service: the announcement
	// Lease cilium-l2announce-<namespace>-<name>.
	Group    string       `json:"group"`
	Services []string     `json:"services"` // sorted "namespace/name"
	IPs      []netip.Addr `json:"ips"`      // sorted
	// Nodes may announce the group (sorted): a policy selects the node and
	// the Service, the node has a device the policy's interface patterns
	// match (for other nodes: the devices they publish to their peers, see
	// L2Member.Devices), and with externalTrafficPolicy: Local the node
	// runs a ready endpoint of the Service.
	Nodes []string `json:"nodes"`
	// Local are this node's entries for the group (IP × matching device);
	// empty when this node is not a candidate.
	Local []*L2AnnounceEntry `json:"local,omitempty"`
}

func (c *L2Candidate) TableHeader() []string {
	return []string{"Group", "Services", "IPs", "Nodes", "Local"}
}

func (c *L2Candidate) TableRow() []string {
	ips := make([]string, len(c.IPs))
	for i, ip := range c.IPs {
		ips[i] = ip.String()
	}
	local := make([]string, len(c.Local))
	for i, e := range c.Local {
		local[i] = e.IP.String() + "@" + e.NetworkInterface
	}
	return []string{c.Group, strings.Join(c.Services, ","), strings.Join(ips, ","), dash(strings.Join(c.Nodes, ",")), dash(strings.Join(local, ","))}
}

var (
	// L2CandidateGroupIndex is the primary index.
	L2CandidateGroupIndex = statedb.Index[*L2Candidate, string]{
		Name: "group",
		FromObject: func(c *L2Candidate) index.KeySet {
			return index.NewKeySet(index.String(c.Group))
		},
		FromKey:    index.String,
		FromString: index.FromString,
		Unique:     true,
	}
	// L2CandidateServiceIndex finds a Service's group.
	L2CandidateServiceIndex = statedb.Index[*L2Candidate, string]{
		Name: "service",
		FromObject: func(c *L2Candidate) index.KeySet {
			return index.StringSlice(c.Services)
		},
		FromKey:    index.String,
		FromString: index.FromString,
	}
)

// NewL2CandidatesTable creates the l2-candidates table.
func NewL2CandidatesTable(db *statedb.DB) (statedb.RWTable[*L2Candidate], error) {
	return statedb.NewTable(db, L2CandidatesTableName, L2CandidateGroupIndex, L2CandidateServiceIndex)
}
