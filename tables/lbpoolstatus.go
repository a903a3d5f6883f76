package tables

import (
	"fmt"
	"slices"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	"github.com/cilium/statedb/reconciler"
)

// LBPoolStatusTableName is the table of pool status LB IPAM computes.
const LBPoolStatusTableName = "lb-pool-status"

// LBPoolStatus is the status LB IPAM wants on one pool. Counts are exact
// decimal strings: an IPv6 /64 alone holds 18446744073709551616 addresses.
type LBPoolStatus struct {
	Name               string `json:"name"`
	ObservedGeneration int64  `json:"observedGeneration"`

	Conflicting     bool   `json:"conflicting"`
	ConflictMessage string `json:"conflictMessage,omitempty"`

	Total     string `json:"total"`
	Available string `json:"available"`
	Used      string `json:"used"`

	// SelectorError and BlockErrors repeat the pool's own mistakes
	// (tables.LBPool), for the io.cilium/bad-service-selector and
	// io.cilium/bad-blocks conditions.
	SelectorError string   `json:"selectorError,omitempty"`
	BlockErrors   []string `json:"blockErrors,omitempty"`
	// ChoiceError: the pool choice annotations that do not parse
	// (PoolChoice), for the lbipam.herald.io/bad-annotations condition.
	ChoiceError string `json:"choiceError,omitempty"`

	// Term is the LB IPAM leader's term this was computed in.
	Term uint64 `json:"term"`

	Status reconciler.Status `json:"status"`
}

// SameStatus reports whether b carries the same status as p.
func (p *LBPoolStatus) SameStatus(b *LBPoolStatus) bool {
	return p.Name == b.Name && p.ObservedGeneration == b.ObservedGeneration &&
		p.Conflicting == b.Conflicting && p.ConflictMessage == b.ConflictMessage &&
		p.Total == b.Total && p.Available == b.Available && p.Used == b.Used &&
		p.SelectorError == b.SelectorError && slices.Equal(p.BlockErrors, b.BlockErrors) && p.ChoiceError == b.ChoiceError
}

func (p *LBPoolStatus) Clone() *LBPoolStatus {
	b := *p
	return &b
}

func (p *LBPoolStatus) GetStatus() reconciler.Status { return p.Status }

func (p *LBPoolStatus) SetStatus(s reconciler.Status) *LBPoolStatus {
	p.Status = s
	return p
}

func (p *LBPoolStatus) TableHeader() []string {
	return []string{"Name", "Conflicting", "Total", "Available", "Used", "Message", "Status"}
}

func (p *LBPoolStatus) TableRow() []string {
	return []string{p.Name, fmt.Sprint(p.Conflicting), p.Total, p.Available, p.Used, dash(p.ConflictMessage), p.Status.Kind.String()}
}

// LBPoolStatusNameIndex is the primary index: the pool's name.
var LBPoolStatusNameIndex = statedb.Index[*LBPoolStatus, string]{
	Name: "name",
	FromObject: func(p *LBPoolStatus) index.KeySet {
		return index.NewKeySet(index.String(p.Name))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewLBPoolStatusTable creates the lb-pool-status table.
func NewLBPoolStatusTable(db *statedb.DB) (statedb.RWTable[*LBPoolStatus], error) {
	return statedb.NewTable(db, LBPoolStatusTableName, LBPoolStatusNameIndex)
}
