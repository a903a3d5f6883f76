package tables

import (
	"fmt"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// L2LeaseHealthTableName is the one-row table saying whether this node's
// announcement Leases are being renewed.
const L2LeaseHealthTableName = "l2-lease-health"

// L2LeaseHealth tells the ARP responder until when this node's view of its
// Leases can be trusted: the last renewal of the stalest Lease it holds,
// plus the lease duration, minus the Lease's 1s time resolution and one
// retry period. After a freeze (a paused
// VM, a starved process) the renewals are old, so the responder stops
// refreshing its heartbeat before the node has even noticed it lost its
// Leases: it never answers for an IP another node has taken over.
type L2LeaseHealth struct {
	Node       string    `json:"node"`
	HeldLeases int       `json:"heldLeases"`
	FreshUntil time.Time `json:"freshUntil"`
}

func (h *L2LeaseHealth) TableHeader() []string {
	return []string{"Node", "HeldLeases", "FreshUntil"}
}

func (h *L2LeaseHealth) TableRow() []string {
	until := "-"
	if !h.FreshUntil.IsZero() {
		until = h.FreshUntil.UTC().Format(time.RFC3339Nano)
	}
	return []string{h.Node, fmt.Sprint(h.HeldLeases), until}
}

// L2LeaseHealthNodeIndex is the primary index.
var L2LeaseHealthNodeIndex = statedb.Index[*L2LeaseHealth, string]{
	Name: "node",
	FromObject: func(h *L2LeaseHealth) index.KeySet {
		return index.NewKeySet(index.String(h.Node))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewL2LeaseHealthTable creates the l2-lease-health table.
func NewL2LeaseHealthTable(db *statedb.DB) (statedb.RWTable[*L2LeaseHealth], error) {
	return statedb.NewTable(db, L2LeaseHealthTableName, L2LeaseHealthNodeIndex)
}
