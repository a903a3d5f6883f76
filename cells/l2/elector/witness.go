package elector

import (
	"context"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/cells/internal/lease"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// The witness records of a two-node cluster: the API server as the
// tie-breaker. Two nodes that lose each other cannot tell a dead peer from
// a cut link; each renews its own record, herald-l2-witness-<node>, a few
// times a second, answers only until a short while after it sent its
// last successful renewal (the responder enforces that deadline by
// itself), and takes the other's groups only once it has seen the other's
// record unchanged for longer than that. A node cut off from the API
// server falls silent before the other acts; two nodes cut from each
// other but not from the API server both renew, and each keeps what it
// holds. See Documentation/l2-announcements.md, "Two-node clusters".

// ownWitness is this node's side: whether to renew, and until when its
// last successful renewal lets it answer.
type ownWitness struct {
	mu      sync.Mutex
	wanted  bool
	until   time.Time
	version string // of the last write, for the next one
	// owners: the record's owner, this node's Node (lease.NodeOwner),
	// once known; every write carries it (an update replaces the whole
	// object).
	owners []metav1.OwnerReference
}

func (w *ownWitness) want(on bool) {
	w.mu.Lock()
	w.wanted = on
	w.mu.Unlock()
}

// deadline is until when the last renewal lets this node answer (zero:
// none succeeded).
func (w *ownWitness) deadline() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.until
}

// renewWitness renews this node's witness record every
// WitnessRenewInterval while it is wanted.
func (e *elector) renewWitness(ctx context.Context) {
	tick := time.NewTicker(l2config.WitnessRenewInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		e.witness.mu.Lock()
		wanted, version := e.witness.wanted, e.witness.version
		e.witness.mu.Unlock()
		if !wanted {
			continue
		}
		sent := time.Now()
		wctx, cancel := context.WithTimeout(ctx, l2config.WitnessAnswerFor)
		next, err := e.writeWitness(wctx, version, sent)
		cancel()
		e.witness.mu.Lock()
		e.witness.version = next
		if err == nil {
			e.witness.until = sent.Add(l2config.WitnessAnswerFor)
		}
		e.witness.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			e.Log.Debug("Witness record renewal failed", "error", err)
		}
	}
}

// writeWitness writes this node's witness record, conditional on the
// version it last wrote ("": read it first). It returns the version to
// write from next time.
func (e *elector) writeWitness(ctx context.Context, version string, sent time.Time) (string, error) {
	name := tables.L2WitnessLeasePrefix + e.self
	if version == "" {
		cur, err := e.recordLeases.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return "", err
		default:
			version = cur.ResourceVersion
		}
	}
	now := metav1.NewMicroTime(sent)
	secs := int32(l2config.WitnessExpiry / time.Second)
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: version},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &e.self, LeaseDurationSeconds: &secs, RenewTime: &now},
	}
	var out *coordinationv1.Lease
	var err error
	if l.OwnerReferences, err = e.witnessOwners(ctx); err != nil {
		return "", err
	}
	if version == "" {
		out, err = e.recordLeases.Create(ctx, l, metav1.CreateOptions{})
	} else {
		out, err = e.recordLeases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		return "", err
	}
	return out.ResourceVersion, nil
}

// witnessOwners is the owner of this node's witness record: its Node, so
// that the record goes with it (read once; none while the Node is not
// registered).
func (e *elector) witnessOwners(ctx context.Context) ([]metav1.OwnerReference, error) {
	e.witness.mu.Lock()
	owners := e.witness.owners
	e.witness.mu.Unlock()
	if owners != nil {
		return owners, nil
	}
	owners, err := lease.NodeOwner(ctx, e.Kube, e.self)
	if err != nil {
		return nil, err
	}
	e.witness.mu.Lock()
	e.witness.owners = owners
	e.witness.mu.Unlock()
	return owners, nil
}

// seenWitness is a peer's witness record as this node watched it.
type seenWitness struct {
	version string
	at      time.Time // when this version was first seen
	// changed: this node saw the record change: the peer renews it, and
	// its expiry means it stopped. A record never seen changing (this
	// agent just started, or the peer never renewed it) proves nothing.
	changed bool
}

// observeWitnesses notes the peers' witness records as read at now.
func (e *elector) observeWitnesses(now time.Time, rows []*tables.L2Lease) {
	seen := map[string]seenWitness{}
	for _, l := range rows {
		s, ok := e.witnesses[l.Name]
		switch {
		case !ok:
			s = seenWitness{version: l.ResourceVersion, at: now}
		case s.version != l.ResourceVersion:
			s = seenWitness{version: l.ResourceVersion, at: now, changed: true}
		}
		seen[l.Name] = s
	}
	e.witnesses = seen
}

// witnessGone reports whether node's witness record expired: seen
// renewed, then unchanged for WitnessExpiry, while the watch delivers.
func (e *elector) witnessGone(node string, now time.Time, watchLive bool) bool {
	s, ok := e.witnesses[tables.L2WitnessLeasePrefix+node]
	return ok && watchLive && s.changed && now.Sub(s.at) > l2config.WitnessExpiry
}
