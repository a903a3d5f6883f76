package tables

import (
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// The two one-row tables between the members election's two cells: the
// members cell (cells/l2/members: the member protocol) tells the elector
// (cells/l2/elector) until when the peers confirm this node, and the
// elector tells the members cell what to publish to the peers. Both are
// apart from l2-members on purpose: l2-candidates is derived from
// l2-members (the peers' devices) and runs again on every change of it,
// and the confirmation moves with every answered echo (about 20 times a
// second).

// L2MemberConfirmationTableName is the one-row table saying until when
// this node's peers confirm it.
const L2MemberConfirmationTableName = "l2-member-confirmation"

// L2MemberConfirmation is until when the peers' answers to this node's
// echo requests let it answer: the time the latest answered request was
// *sent*, plus the window a confirmation opens. It only ever moves
// forward, so a reader that sees an older row sees an earlier deadline:
// a stale read is never later than the truth.
type L2MemberConfirmation struct {
	Node           string    `json:"node"`
	ConfirmedUntil time.Time `json:"confirmedUntil"`
	// ConfirmedSince is when the unbroken run of confirmations that ends
	// at ConfirmedUntil began: the send time of its first answered
	// request, each later one sent before the one before it ran out. The
	// run as a whole is the evidence that this node was never without a
	// confirmation in between, however late it is read; a reader that
	// sees an older row sees an older run, as true as the newer one.
	ConfirmedSince time.Time `json:"confirmedSince"`
}

func (c *L2MemberConfirmation) TableHeader() []string {
	return []string{"Node", "ConfirmedSince", "ConfirmedUntil"}
}

func (c *L2MemberConfirmation) TableRow() []string {
	return []string{c.Node, timeOrDash(c.ConfirmedSince), timeOrDash(c.ConfirmedUntil)}
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// L2MemberConfirmationNodeIndex is the primary index.
var L2MemberConfirmationNodeIndex = statedb.Index[*L2MemberConfirmation, string]{
	Name: "node",
	FromObject: func(c *L2MemberConfirmation) index.KeySet {
		return index.NewKeySet(index.String(c.Node))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewL2MemberConfirmationTable creates the l2-member-confirmation table.
func NewL2MemberConfirmationTable(db *statedb.DB) (statedb.RWTable[*L2MemberConfirmation], error) {
	return statedb.NewTable(db, L2MemberConfirmationTableName, L2MemberConfirmationNodeIndex)
}
