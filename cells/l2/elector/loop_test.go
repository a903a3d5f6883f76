package elector

import (
	"fmt"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/tables"
)

// testElector is an elector of node1 on fresh tables, with the tables the
// members cell writes.
type testElector struct {
	*elector
	members      statedb.RWTable[*tables.L2Member]
	confirmation statedb.RWTable[*tables.L2MemberConfirmation]
	records      statedb.RWTable[*tables.L2Lease]
}

func newTestElector(t *testing.T) testElector {
	t.Helper()
	db := statedb.New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cands, err := tables.NewL2CandidatesTable(db)
	must(err)
	records, err := tables.NewL2LeasesTable(db)
	must(err)
	leadership, err := tables.NewLeadershipTable(db)
	must(err)
	announce, err := tables.NewL2AnnounceTable(db)
	must(err)
	health, err := tables.NewL2LeaseHealthTable(db)
	must(err)
	owners, err := tables.NewL2OwnersTable(db)
	must(err)
	meta, err := tables.NewL2MemberMetaTable(db)
	must(err)
	members, err := tables.NewL2MembersTable(db)
	must(err)
	conf, err := tables.NewL2MemberConfirmationTable(db)
	must(err)
	terms := 0
	p := params{Log: slog.New(slog.DiscardHandler), DB: db, Candidates: cands, Records: records, Leadership: leadership,
		Announce: announce, Health: health, Owners: owners, Meta: meta, Members: members, Confirmation: conf,
		Events: record.NewFakeRecorder(100)}
	e := &elector{params: p, self: "node1", timings: tables.LeaseTimings{Duration: 15 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: 2 * time.Second},
		fence: fence{newTerm: func() string { terms++; return fmt.Sprint("t", terms) }},
		seen:  map[string]seenLease{}, terms: termsSeen{}, records: map[string]seenRecord{}, took: map[string]string{}, inflight: map[string]bool{},
		overlay: map[string]overlay{}, announced: map[string]bool{},
		results: make(chan writeResult, 64), writing: make(chan struct{}, maxWritesInFlight),
		metrics: newElectorMetrics("node1"),
	}
	return testElector{e, members, conf, records}
}

func (te testElector) write(rows ...any) {
	wtxn := te.DB.WriteTxn(te.members, te.confirmation)
	for _, r := range rows {
		switch r := r.(type) {
		case *tables.L2Member:
			_, _, _ = te.members.Insert(wtxn, r)
		case *tables.L2MemberConfirmation:
			_, _, _ = te.confirmation.Insert(wtxn, r)
		}
	}
	wtxn.Commit()
}

// step is a turn and the round it starts, run to its end: the loop's
// work between two wake-ups when nothing runs concurrently.
func (te testElector) step(now time.Time, last *lastTurn) memberWatches {
	next, w := te.turn(now, last, nopHealth{})
	if next != nil {
		last.inputs = te.round(*next)
	}
	return w
}

// responderDone is the responder reporting the entry programmed, or out.
func (te testElector) responderDone(en *tables.L2AnnounceEntry) {
	wtxn := te.DB.WriteTxn(te.Announce)
	_, _, _ = te.Announce.Insert(wtxn, en.Clone().SetStatus(reconciler.StatusDone()))
	wtxn.Commit()
}

// health is node1's row of l2-lease-health: the deadline published.
func (te testElector) health(txn statedb.ReadTxn) *tables.L2LeaseHealth {
	h, _, _ := te.Health.Get(txn, tables.L2LeaseHealthNodeIndex.Query("node1"))
	return h
}

type nopHealth struct{}

func (nopHealth) OK(string)                   {}
func (nopHealth) Stopped(string)              {}
func (nopHealth) Degraded(string, error)      {}
func (nopHealth) NewScope(string) cell.Health { return nopHealth{} }
func (nopHealth) Close()                      {}

// A turn takes the peers' confirmation from l2-member-confirmation and
// the members from l2-members: three of three alive and a confirmation
// give a term, answered until the confirmation's deadline, which the
// responder reads in l2-lease-health and the peers learn through
// l2-member-meta; the watches it returns close when the members cell
// writes again.
func TestTurnReadsTheMembersCell(t *testing.T) {
	te := newTestElector(t)
	now := time.Now()
	alive := func(n string) *tables.L2Member {
		return &tables.L2Member{Node: n, State: tables.MemberAlive, Since: now.Add(-time.Minute), Self: n == "node1"}
	}
	until := now.Add(200 * time.Millisecond)
	te.write(alive("node1"), alive("node2"), alive("node3"), &tables.L2MemberConfirmation{Node: "node1", ConfirmedUntil: until})

	var last lastTurn
	w := te.step(now, &last)
	txn := te.DB.ReadTxn()
	h, _, ok := te.Health.Get(txn, tables.L2LeaseHealthNodeIndex.Query("node1"))
	if !ok || !h.FreshUntil.Equal(until) {
		t.Fatalf("l2-lease-health: %+v, want fresh until the confirmation's %s", h, until)
	}
	if m, _, ok := te.Meta.Get(txn, tables.L2MemberMetaNodeIndex.Query("node1")); !ok || m.Term != "t1" || m.Silent != "" {
		t.Fatalf("l2-member-meta: %+v, want term t1", m)
	}
	if !last.fresh || last.term != "t1" {
		t.Fatalf("after the turn: %+v", last)
	}

	// A later confirmation closes the confirmation's watch and extends
	// the deadline, without touching the members' watch.
	later := until.Add(50 * time.Millisecond)
	te.write(&tables.L2MemberConfirmation{Node: "node1", ConfirmedUntil: later})
	select {
	case <-w.confirmation:
	default:
		t.Fatal("the confirmation's watch did not close")
	}
	select {
	case <-w.members:
		t.Fatal("the members' watch closed on a confirmation")
	default:
	}
	w = te.step(now.Add(10*time.Millisecond), &last)
	if h := te.health(te.DB.ReadTxn()); !h.FreshUntil.Equal(later) {
		t.Fatalf("fresh until %s after a later confirmation, want %s", h.FreshUntil, later)
	}

	// The others dead, and no node Lease of this one: a confirmation
	// extends nothing any more.
	dead := func(n string) *tables.L2Member {
		return &tables.L2Member{Node: n, State: tables.MemberDead, Since: now}
	}
	te.write(dead("node2"), dead("node3"), &tables.L2MemberConfirmation{Node: "node1", ConfirmedUntil: later.Add(time.Second)})
	select {
	case <-w.members:
	default:
		t.Fatal("the members' watch did not close")
	}
	te.step(now.Add(20*time.Millisecond), &last)
	if h := te.health(te.DB.ReadTxn()); !h.FreshUntil.Equal(later) {
		t.Fatalf("fresh until %s with the others dead, want still %s", h.FreshUntil, later)
	}
}

// Without a confirmation row (no echo answered yet) a node of three does
// not answer.
func TestTurnWithoutConfirmation(t *testing.T) {
	te := newTestElector(t)
	now := time.Now()
	for _, n := range []string{"node1", "node2", "node3"} {
		te.write(&tables.L2Member{Node: n, State: tables.MemberAlive, Since: now, Self: n == "node1"})
	}
	var last lastTurn
	te.step(now, &last)
	if last.fresh || last.term != "" {
		t.Fatalf("no confirmation, yet %+v", last)
	}
	if h, _, ok := te.Health.Get(te.DB.ReadTxn(), tables.L2LeaseHealthNodeIndex.Query("node1")); !ok || !h.FreshUntil.IsZero() {
		t.Fatalf("l2-lease-health: %+v, want no deadline", h)
	}
}

// A stopping elector says the node is silent (for the members cell to
// leave) only once the responder confirmed every entry out, or its
// deadline passed; the term and takeovers it published stay.
func TestShutdownSaysSilent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		confirm bool
		want    string
	}{
		{"the responder confirms", true, "the responder withdrew every entry"},
		{"the responder does not", false, "the responder's deadline passed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestElector(t)
			te.fence.until = time.Now().Add(300 * time.Millisecond)
			en := &tables.L2AnnounceEntry{IP: netip.MustParseAddr("198.18.0.1"), NetworkInterface: "eth0", Status: reconciler.StatusDone()}
			wtxn := te.DB.WriteTxn(te.Announce, te.Meta)
			_, _, _ = te.Announce.Insert(wtxn, en)
			_, _, _ = te.Meta.Insert(wtxn, &tables.L2MemberMeta{Node: "node1", Term: "t1", TookOver: []string{"node2/t2#00000001"}})
			wtxn.Commit()

			done := make(chan struct{})
			go func() {
				te.shutdown()
				close(done)
			}()
			// Not silent while the entry is in the responder's maps.
			time.Sleep(100 * time.Millisecond)
			if m, _, _ := te.Meta.Get(te.DB.ReadTxn(), tables.L2MemberMetaNodeIndex.Query("node1")); m.Silent != "" {
				t.Fatalf("silent (%q) before the responder confirmed and before the deadline", m.Silent)
			}
			if tc.confirm {
				wtxn := te.DB.WriteTxn(te.Announce)
				w := en.Clone()
				w.Withdrawn, w.Status = true, reconciler.StatusDone()
				_, _, _ = te.Announce.Insert(wtxn, w)
				wtxn.Commit()
			}
			<-done
			if !tc.confirm && time.Now().Before(te.fence.until) {
				t.Fatal("stopped before the deadline without the responder's confirmation")
			}
			txn := te.DB.ReadTxn()
			m, _, _ := te.Meta.Get(txn, tables.L2MemberMetaNodeIndex.Query("node1"))
			if m.Silent != tc.want || m.Term != "t1" || len(m.TookOver) != 1 {
				t.Fatalf("l2-member-meta after shutdown: %+v, want silent because %q, term and takeovers kept", m, tc.want)
			}
			if n := te.Announce.NumObjects(txn); n != 0 {
				t.Fatalf("%d entries left", n)
			}
		})
	}
}

// A new term publishes no deadline while entries of the old one are in
// the responder: the old term's groups may have been taken over, and the
// heartbeat moves apart from the entries. It marks them withdrawn, and
// publishes the deadline once the responder confirmed them out.
func TestNewTermWaitsForOldEntries(t *testing.T) {
	te := newTestElector(t)
	now := time.Now()
	for _, n := range []string{"node1", "node2", "node3"} {
		te.write(&tables.L2Member{Node: n, State: tables.MemberAlive, Since: now.Add(-time.Minute), Self: n == "node1"})
	}
	until := now.Add(200 * time.Millisecond)
	te.write(&tables.L2MemberConfirmation{Node: "node1", ConfirmedUntil: until})
	old := &tables.L2AnnounceEntry{IP: netip.MustParseAddr("198.18.0.1"), NetworkInterface: "eth0", Status: reconciler.StatusDone()}
	wtxn := te.DB.WriteTxn(te.Announce)
	_, _, _ = te.Announce.Insert(wtxn, old)
	wtxn.Commit()

	var last lastTurn
	te.step(now, &last)
	txn := te.DB.ReadTxn()
	if h := te.health(txn); !h.FreshUntil.IsZero() {
		t.Fatalf("deadline %s published with the old term's entry in the responder", h.FreshUntil)
	}
	en, _, ok := te.Announce.Get(txn, tables.L2AnnounceKeyIndex.Query(tables.L2AnnounceKey{IP: old.IP, NetworkInterface: "eth0"}))
	if !ok || !en.Withdrawn || en.Status.Kind == reconciler.StatusKindDone {
		t.Fatalf("old entry %+v, want it withdrawn, pending", en)
	}

	// The responder took it out.
	te.responderDone(en)
	te.step(now.Add(10*time.Millisecond), &last)
	txn = te.DB.ReadTxn()
	if h := te.health(txn); !h.FreshUntil.Equal(until) {
		t.Fatalf("deadline %s once the old entry is out, want %s", h.FreshUntil, until)
	}
	if n := te.Announce.NumObjects(txn); n != 0 {
		t.Fatalf("%d entries left", n)
	}
}

// A takeover record of this node's current term (the peers judged it
// ended, and move its groups by that record): the node leaves the term
// at once, as after a gap in its liveness, and its old entries go out
// before the new term's deadline is published.
func TestTermOnARecordIsLeft(t *testing.T) {
	te := newTestElector(t)
	now := time.Now()
	for _, n := range []string{"node1", "node2", "node3"} {
		te.write(&tables.L2Member{Node: n, State: tables.MemberAlive, Since: now.Add(-time.Minute), Self: n == "node1"})
	}
	te.write(&tables.L2MemberConfirmation{Node: "node1", ConfirmedUntil: now.Add(time.Second)})
	var last lastTurn
	te.step(now, &last)
	if last.term != "t1" || !last.fresh {
		t.Fatalf("after the first turn: %+v, want fresh in t1", last)
	}
	old := &tables.L2AnnounceEntry{IP: netip.MustParseAddr("198.18.0.1"), NetworkInterface: "eth0", Status: reconciler.StatusDone()}
	wtxn := te.DB.WriteTxn(te.Announce, te.records)
	_, _, _ = te.Announce.Insert(wtxn, old)
	_, _, _ = te.records.Insert(wtxn, &tables.L2Lease{Name: tables.L2TakeoverLeaseName("node1", "t1"), ResourceVersion: "7",
		Takeover: &tables.L2Takeover{From: "node1/t1", Owners: map[string]string{"g": "node2/t2"}}})
	wtxn.Commit()

	te.step(now.Add(10*time.Millisecond), &last)
	txn := te.DB.ReadTxn()
	if last.term != "t2" {
		t.Fatalf("term %q with a takeover record of t1, want t2", last.term)
	}
	if m, _, _ := te.Meta.Get(txn, tables.L2MemberMetaNodeIndex.Query("node1")); m.Term != "t2" {
		t.Fatalf("the peers learn term %q, want t2", m.Term)
	}
	if h := te.health(txn); !h.FreshUntil.IsZero() {
		t.Fatalf("deadline %s published with t1's entry in the responder", h.FreshUntil)
	}
	if en, _, _ := te.Announce.Get(txn, tables.L2AnnounceKeyIndex.Query(tables.L2AnnounceKey{IP: old.IP, NetworkInterface: "eth0"})); !en.Withdrawn {
		t.Fatalf("t1's entry %+v, want it withdrawn", en)
	}
}

// An entry no group wants any more (its Service deleted) leaves the
// responder before it leaves the table: a new term that begins while the
// responder still holds it publishes no deadline until it is out.
func TestGoneEntryWithdrawnBeforeDeleted(t *testing.T) {
	te := newTestElector(t)
	now := time.Now()
	for _, n := range []string{"node1", "node2", "node3"} {
		te.write(&tables.L2Member{Node: n, State: tables.MemberAlive, Since: now.Add(-time.Minute), Self: n == "node1"})
	}
	until := now.Add(time.Second)
	te.write(&tables.L2MemberConfirmation{Node: "node1", ConfirmedUntil: until})
	var last lastTurn
	te.step(now, &last)
	gone := &tables.L2AnnounceEntry{IP: netip.MustParseAddr("198.18.0.1"), NetworkInterface: "eth0", Status: reconciler.StatusDone()}
	wtxn := te.DB.WriteTxn(te.Announce)
	_, _, _ = te.Announce.Insert(wtxn, gone)
	wtxn.Commit()
	key := tables.L2AnnounceKeyIndex.Query(tables.L2AnnounceKey{IP: gone.IP, NetworkInterface: "eth0"})

	te.step(now.Add(5*time.Millisecond), &last)
	en, _, ok := te.Announce.Get(te.DB.ReadTxn(), key)
	if !ok || !en.Withdrawn || en.Status.Kind == reconciler.StatusKindDone {
		t.Fatalf("gone entry %+v (in the table: %v), want it withdrawn, pending", en, ok)
	}

	// A new term before the responder took it out.
	wtxn = te.DB.WriteTxn(te.records)
	_, _, _ = te.records.Insert(wtxn, &tables.L2Lease{Name: tables.L2TakeoverLeaseName("node1", "t1"), ResourceVersion: "7",
		Takeover: &tables.L2Takeover{From: "node1/t1", Owners: map[string]string{}}})
	wtxn.Commit()
	te.step(now.Add(10*time.Millisecond), &last)
	if last.term != "t2" {
		t.Fatalf("term %q, want t2", last.term)
	}
	if h := te.health(te.DB.ReadTxn()); !h.FreshUntil.IsZero() {
		t.Fatalf("deadline %s published in t2 with the gone entry in the responder", h.FreshUntil)
	}

	// The responder took it out: the deadline goes out and the entry goes.
	te.responderDone(en)
	te.step(now.Add(15*time.Millisecond), &last)
	txn := te.DB.ReadTxn()
	if h := te.health(txn); !h.FreshUntil.Equal(until) {
		t.Fatalf("deadline %s once the entry is out, want %s", h.FreshUntil, until)
	}
	if n := te.Announce.NumObjects(txn); n != 0 {
		t.Fatalf("%d entries left", n)
	}
}
