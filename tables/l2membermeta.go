package tables

import (
	"strings"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// L2MemberMetaTableName is the one-row table of what the elector
// publishes to the peers through the member protocol.
const L2MemberMetaTableName = "l2-member-meta"

// L2TookMany stands for the whole TookOver list in a member's metadata
// when the list does not fit into it: the peers then take nothing from
// dead holders' terms.
const L2TookMany = "*"

// L2MemberMeta is this node's part of its member metadata, as the elector
// decides it; the members cell adds the selected devices and publishes
// it (the other nodes' rows of l2-members show what they published).
type L2MemberMeta struct {
	Node string `json:"node"`
	// Term is this node's current term (L2Member.Term), "" before the
	// first.
	Term string `json:"term"`
	// TookOver: the groups this node answers for without having recorded
	// it in their Leases (L2Member.TookOver).
	TookOver []string `json:"tookOver,omitempty"`
	// Silent is set when the agent stops, once this node answers for
	// nothing any more, and says how the elector knows: the node may
	// leave the members then, and the peers take its groups over at once.
	Silent string `json:"silent,omitempty"`
}

func (m *L2MemberMeta) TableHeader() []string {
	return []string{"Node", "Term", "TookOver", "Silent"}
}

func (m *L2MemberMeta) TableRow() []string {
	return []string{m.Node, dash(m.Term), dash(strings.Join(m.TookOver, ",")), dash(m.Silent)}
}

// L2MemberMetaNodeIndex is the primary index.
var L2MemberMetaNodeIndex = statedb.Index[*L2MemberMeta, string]{
	Name: "node",
	FromObject: func(m *L2MemberMeta) index.KeySet {
		return index.NewKeySet(index.String(m.Node))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewL2MemberMetaTable creates the l2-member-meta table.
func NewL2MemberMetaTable(db *statedb.DB) (statedb.RWTable[*L2MemberMeta], error) {
	return statedb.NewTable(db, L2MemberMetaTableName, L2MemberMetaNodeIndex)
}
