package tables

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// LeadershipTableName is the table of the cluster-wide roles this agent
// campaigns for (one row per Lease) and how far it may act on them.
const LeadershipTableName = "leadership"

// LBIPAMLease is the Lease the LB IPAM allocator holds; the rows of
// lb-allocations and lb-pool-status are written under it.
const LBIPAMLease = "herald-lb-ipam"

// LeaseTimings are the timings of one Lease election.
type LeaseTimings struct {
	// Duration is how long the others wait after the holder's last
	// renewal before they take the Lease over. Whole seconds: the Lease
	// object stores it as leaseDurationSeconds.
	Duration time.Duration
	// RenewDeadline is how long after sending a successful renewal the
	// holder still acts as the leader. Duration - RenewDeadline is the
	// margin that keeps a stale leader's last writes ahead of the next
	// leader's first ones.
	RenewDeadline time.Duration
	// RetryPeriod is how often the holder renews.
	RetryPeriod time.Duration
}

// Validate rejects timings under which two agents could lead at once, or
// under which a healthy leader would keep losing its Lease.
func (t LeaseTimings) Validate() error {
	switch {
	case t.Duration < time.Second || t.Duration%time.Second != 0:
		return fmt.Errorf("lease duration %s must be a whole number of seconds, at least 1s (the Lease stores whole seconds)", t.Duration)
	case t.RenewDeadline <= 0 || t.RenewDeadline >= t.Duration:
		return fmt.Errorf("renew deadline %s must be positive and shorter than the lease duration %s", t.RenewDeadline, t.Duration)
	case t.Duration-t.RenewDeadline < 250*time.Millisecond:
		return fmt.Errorf("lease duration %s minus renew deadline %s leaves less than 250ms for a stale leader's last writes to land", t.Duration, t.RenewDeadline)
	case t.RetryPeriod <= 0 || 2*t.RetryPeriod > t.RenewDeadline:
		return fmt.Errorf("retry period %s must be positive and at most half the renew deadline %s (two renewals per deadline)", t.RetryPeriod, t.RenewDeadline)
	}
	return nil
}

// Election asks the election cell to campaign for a Lease. A cell that
// needs a cluster-wide singleton provides one into the group "elections".
type Election struct {
	Lease   string
	Timings LeaseTimings
	// Identity is the holder identity to campaign as; empty: one per agent
	// process ("<node>_<uuid>"), so that a restarted agent waits for its
	// predecessor's term to end. Only a Lease no other process of the node
	// could act on alongside (see the L2 node Lease) may use a fixed one.
	Identity string
	// OwnerNode: the Lease belongs to this Node, and goes with it (an
	// owner reference, for the Kubernetes garbage collector); "" for a
	// Lease of the cluster.
	OwnerNode string
}

// Leadership is this agent's standing in the election for one Lease.
type Leadership struct {
	Lease    string `json:"lease"`
	Identity string `json:"identity"` // this agent process in the Lease
	Holder   string `json:"holder"`   // holderIdentity as last seen; "" = free or unknown

	Leading bool `json:"leading"`
	// Term counts this agent's terms as leader. Work decided in one term
	// is never written in another: every term starts from a fresh read of
	// the API server.
	Term uint64 `json:"term"`
	// ValidUntil ends the current term's right to write: the last
	// successful renewal's send time plus the renew deadline. It keeps its
	// monotonic clock reading; compare only with time.Now().
	ValidUntil time.Time `json:"validUntil"`
}

// ErrNotLeader is returned by Fence when a write may not go out.
var ErrNotLeader = errors.New("not the leader")

// Fence decides whether a write decided in term may be sent now, at the
// very last moment before sending it. It returns a context that ends when
// the term's validity does, so a request still waiting in the client (rate
// limiter, connection) is abandoned rather than sent late.
//
// Both clocks must agree that the term is valid: the monotonic one
// (process pauses, SIGSTOP) and the wall clock (a VM whose monotonic clock
// stood still while it was suspended, then corrected).
func (l *Leadership) Fence(ctx context.Context, term uint64, now time.Time) (context.Context, context.CancelFunc, error) {
	switch {
	case l == nil || !l.Leading:
		return nil, nil, fmt.Errorf("%w of %s", ErrNotLeader, leaseName(l))
	case l.Term != term:
		return nil, nil, fmt.Errorf("%w of %s in term %d (now term %d)", ErrNotLeader, l.Lease, term, l.Term)
	case !now.Before(l.ValidUntil) || !now.Round(0).Before(l.ValidUntil.Round(0)):
		return nil, nil, fmt.Errorf("%w of %s: term %d lapsed at %s, no renewal since", ErrNotLeader, l.Lease, term, l.ValidUntil.Format(time.RFC3339Nano))
	}
	c, cancel := context.WithDeadline(ctx, l.ValidUntil)
	return c, cancel, nil
}

func leaseName(l *Leadership) string {
	if l == nil {
		return "the Lease"
	}
	return l.Lease
}

func (l *Leadership) TableHeader() []string {
	return []string{"Lease", "Identity", "Holder", "Leading", "Term", "ValidUntil"}
}

func (l *Leadership) TableRow() []string {
	valid := "-"
	if l.Leading {
		valid = l.ValidUntil.UTC().Format("15:04:05.000")
	}
	return []string{l.Lease, l.Identity, dash(l.Holder), fmt.Sprint(l.Leading), fmt.Sprint(l.Term), valid}
}

// LeadershipLeaseIndex is the primary index: the Lease's name.
var LeadershipLeaseIndex = statedb.Index[*Leadership, string]{
	Name: "lease",
	FromObject: func(l *Leadership) index.KeySet {
		return index.NewKeySet(index.String(l.Lease))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewLeadershipTable creates the leadership table.
func NewLeadershipTable(db *statedb.DB) (statedb.RWTable[*Leadership], error) {
	return statedb.NewTable(db, LeadershipTableName, LeadershipLeaseIndex)
}

// LeadingTerm returns this agent's term if it leads the Lease, and a
// channel closed when that may have changed.
func LeadingTerm(txn statedb.ReadTxn, t statedb.Table[*Leadership], lease string) (term uint64, ok bool, watch <-chan struct{}) {
	l, _, watch, found := t.GetWatch(txn, LeadershipLeaseIndex.Query(lease))
	if !found || !l.Leading {
		return 0, false, watch
	}
	return l.Term, true, watch
}
