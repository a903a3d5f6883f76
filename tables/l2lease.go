package tables

import (
	"strings"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	coordinationv1 "k8s.io/api/coordination/v1"
)

// L2LeasesTableName is the table of the Leases in the agents' namespace:
// the announcement Leases that record who holds each group, and the
// per-node Leases of the L2 liveness fence.
const L2LeasesTableName = "l2-leases"

// L2TermAnnotation on an announcement Lease names the holder's term (see
// L2Member.Term) the Lease was written for.
const L2TermAnnotation = "l2.herald.io/term"

// L2NodeLeasePrefix starts the name of each node's liveness Lease,
// herald-l2-node-<node>.
const L2NodeLeasePrefix = "herald-l2-node-"

// L2Lease is a Lease as the L2 elector reads it.
type L2Lease struct {
	Name            string    `json:"name"`
	Holder          string    `json:"holder"`
	Term            string    `json:"term,omitempty"`
	ResourceVersion string    `json:"resourceVersion"`
	RenewTime       time.Time `json:"renewTime"`
	DurationSeconds int32     `json:"durationSeconds"`
	// Transitions is the Lease's leaseTransitions: how often it changed
	// hands.
	Transitions int32 `json:"transitions,omitempty"`
	// AcquireTime is when the holder took the Lease.
	AcquireTime time.Time `json:"acquireTime,omitempty"`
	// Takeover is the content of a takeover record
	// (herald-l2-takeover-*), nil on other Leases.
	Takeover *L2Takeover `json:"takeover,omitempty"`
}

func (l *L2Lease) TableHeader() []string {
	return []string{"Name", "Holder", "Term", "RenewTime"}
}

func (l *L2Lease) TableRow() []string {
	renew := "-"
	if !l.RenewTime.IsZero() {
		renew = l.RenewTime.UTC().Format(time.RFC3339)
	}
	holder := dash(l.Holder)
	if l.Takeover != nil {
		holder = l.Takeover.String()
	}
	return []string{l.Name, holder, dash(l.Term), renew}
}

// L2LeaseNameIndex is the primary index.
var L2LeaseNameIndex = statedb.Index[*L2Lease, string]{
	Name: "name",
	FromObject: func(l *L2Lease) index.KeySet {
		return index.NewKeySet(index.String(l.Name))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewL2LeasesTable creates the l2-leases table.
func NewL2LeasesTable(db *statedb.DB) (statedb.RWTable[*L2Lease], error) {
	return statedb.NewTable(db, L2LeasesTableName, L2LeaseNameIndex)
}

// L2LeaseFromK8s converts a Lease into a row.
func L2LeaseFromK8s(l *coordinationv1.Lease) *L2Lease {
	row := &L2Lease{Name: l.Name, ResourceVersion: l.ResourceVersion, Term: l.Annotations[L2TermAnnotation]}
	if l.Spec.HolderIdentity != nil {
		row.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		row.RenewTime = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		row.DurationSeconds = *l.Spec.LeaseDurationSeconds
	}
	if l.Spec.LeaseTransitions != nil {
		row.Transitions = *l.Spec.LeaseTransitions
	}
	if l.Spec.AcquireTime != nil {
		row.AcquireTime = l.Spec.AcquireTime.Time
	}
	if strings.HasPrefix(l.Name, L2TakeoverLeasePrefix) {
		row.Takeover = ParseL2Takeover(l.Annotations[L2TakeoverAnnotation])
	}
	return row
}

// L2WitnessLeasePrefix starts the name of each node's witness record,
// herald-l2-witness-<node>: renewed a few times a second while a cluster
// has two nodes, the tie-breaker between them (the API server is the
// witness).
const L2WitnessLeasePrefix = "herald-l2-witness-"
