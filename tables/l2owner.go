package tables

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// L2OwnersTableName is the table of this agent's view of who answers for
// each announced group, and why.
const L2OwnersTableName = "l2-owners"

// L2Owner is one group's ownership as this agent sees it.
type L2Owner struct {
	Group string       `json:"group"`
	IPs   []netip.Addr `json:"ips"`
	// Owner is the node placement chose among the live candidates.
	Owner string `json:"owner"`
	// Holder is the node (and term) the group's Lease names.
	Holder string `json:"holder"`
	// Announced: this node answers for the group.
	Announced bool   `json:"announced"`
	Why       string `json:"why"`
}

// Same reports whether b says what o says. The elector compares every
// group's row with the one it would write, in every round: by field, as
// the JSON of a thousand rows is most of a round's cost.
func (o *L2Owner) Same(b *L2Owner) bool {
	return o.Group == b.Group && slices.Equal(o.IPs, b.IPs) && o.Owner == b.Owner && o.Holder == b.Holder &&
		o.Announced == b.Announced && o.Why == b.Why
}

func (o *L2Owner) TableHeader() []string {
	return []string{"Group", "IPs", "Owner", "Holder", "Here", "Why"}
}

func (o *L2Owner) TableRow() []string {
	ips := make([]string, len(o.IPs))
	for i, ip := range o.IPs {
		ips[i] = ip.String()
	}
	here := "-"
	if o.Announced {
		here = "answering"
	}
	return []string{o.Group, strings.Join(ips, ","), dash(o.Owner), dash(o.Holder), here, o.Why}
}

// L2OwnerGroupIndex is the primary index.
var L2OwnerGroupIndex = statedb.Index[*L2Owner, string]{
	Name: "group",
	FromObject: func(o *L2Owner) index.KeySet {
		return index.NewKeySet(index.String(o.Group))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewL2OwnersTable creates the l2-owners table.
func NewL2OwnersTable(db *statedb.DB) (statedb.RWTable[*L2Owner], error) {
	return statedb.NewTable(db, L2OwnersTableName, L2OwnerGroupIndex)
}
