package tables

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// L2MembersTableName is the table of the agents that take part in L2
// announcements, as this agent's failure detector sees them (written by
// cells/l2/members, with what each member published).
const L2MembersTableName = "l2-members"

// Member states, as the failure detector (memberlist) reports them.
const (
	MemberAlive   = "alive"
	MemberSuspect = "suspect"
	MemberDead    = "dead"
	MemberLeft    = "left"
)

// L2Member is one agent of the cluster (this one included).
type L2Member struct {
	Node  string         `json:"node"`
	Addr  netip.AddrPort `json:"addr"`
	State string         `json:"state"`
	// Since is when this agent saw the member enter State.
	Since time.Time `json:"since"`
	// Term identifies the member's current stretch of confirmed liveness:
	// it changes whenever the member had to stop answering (a freeze, a
	// partition), and announcement Leases name the term they were written
	// for, so that a Lease from an earlier term counts for nothing.
	Term string `json:"term"`
	// Devices are the member's selected network devices, for the policies'
	// interface patterns.
	Devices []string `json:"devices,omitempty"`
	// TookOver lists "node/term" holders whose groups this member answers
	// for without having recorded it in their Leases yet (the API server
	// was unreachable when it took them): nobody else may take them.
	TookOver []string `json:"tookOver,omitempty"`
	// Self marks this agent's own row.
	Self bool `json:"self,omitempty"`
}

// Live reports whether the failure detector counts the member as up.
func (m *L2Member) Live() bool { return m.State == MemberAlive || m.State == MemberSuspect }

func (m *L2Member) TableHeader() []string {
	return []string{"Node", "Address", "State", "Since", "Term", "Devices", "TookOver"}
}

func (m *L2Member) TableRow() []string {
	name := m.Node
	if m.Self {
		name += " (self)"
	}
	return []string{name, m.Addr.String(), m.State, fmt.Sprintf("%s ago", time.Since(m.Since).Truncate(time.Millisecond)),
		dash(m.Term), dash(strings.Join(m.Devices, ",")), dash(strings.Join(m.TookOver, ","))}
}

// L2MemberNodeIndex is the primary index.
var L2MemberNodeIndex = statedb.Index[*L2Member, string]{
	Name: "node",
	FromObject: func(m *L2Member) index.KeySet {
		return index.NewKeySet(index.String(m.Node))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewL2MembersTable creates the l2-members table.
func NewL2MembersTable(db *statedb.DB) (statedb.RWTable[*L2Member], error) {
	return statedb.NewTable(db, L2MembersTableName, L2MemberNodeIndex)
}
