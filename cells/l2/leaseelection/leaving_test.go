package leaseelection

import (
	"context"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/tables"
)

// leavingWorld is an announcer of node1 on fresh tables, with campaigns
// that run no elector: the test sets their standing, and each records
// whether the responder had every withdrawn entry out when its Lease was
// released.
type leavingWorld struct {
	*announcer
	t        *testing.T
	released map[string]bool // lease → every withdrawn entry out at the release
}

func newLeavingWorld(t *testing.T) *leavingWorld {
	t.Helper()
	db := statedb.New()
	announce, err := tables.NewL2AnnounceTable(db)
	if err != nil {
		t.Fatal(err)
	}
	health, err := tables.NewL2LeaseHealthTable(db)
	if err != nil {
		t.Fatal(err)
	}
	a := &announcer{params: params{Log: slog.New(slog.DiscardHandler), DB: db, Announce: announce, Health: health,
		Events: record.NewFakeRecorder(100)}, node: "node1", timings: tables.LeaseTimings{RenewDeadline: time.Second}}
	return &leavingWorld{announcer: a, t: t, released: map[string]bool{}}
}

// held is a campaign that holds its Lease until validUntil.
func (w *leavingWorld) held(lease string, validUntil time.Time) *campaign {
	c := &campaign{done: make(chan struct{}), leading: true, validUntil: validUntil}
	c.cancel = func() {
		out := true
		for en := range w.Announce.All(w.DB.ReadTxn()) {
			out = out && (!en.Withdrawn || en.Out())
		}
		w.released[lease] = out
		select {
		case <-c.done:
		default:
			close(c.done)
		}
	}
	return c
}

// groupOf is a selection of one group with one address.
func groupOf(lease, ip string) selection {
	k := tables.L2AnnounceKey{IP: netip.MustParseAddr(ip), NetworkInterface: "eth0"}
	return selection{lease: {lease: lease, services: []string{"ns/" + lease},
		entries: map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{k: {IP: k.IP, NetworkInterface: "eth0", Ifindex: 2, Origins: []string{"ns/" + lease}}}}}
}

// responderDone is the responder: every entry programmed or taken out.
func (w *leavingWorld) responderDone() {
	wtxn := w.DB.WriteTxn(w.Announce)
	for en := range w.Announce.All(wtxn) {
		if en.Status.Kind != reconciler.StatusKindDone {
			_, _, _ = w.Announce.Insert(wtxn, en.Clone().SetStatus(reconciler.StatusDone()))
		}
	}
	wtxn.Commit()
}

func (w *leavingWorld) entry(ip string) (*tables.L2AnnounceEntry, bool) {
	en, _, ok := w.Announce.Get(w.DB.ReadTxn(), tables.L2AnnounceKeyIndex.Query(tables.L2AnnounceKey{IP: netip.MustParseAddr(ip), NetworkInterface: "eth0"}))
	return en, ok
}

func (w *leavingWorld) freshUntil() time.Time {
	h, _, _ := w.Health.Get(w.DB.ReadTxn(), tables.L2LeaseHealthNodeIndex.Query("node1"))
	return h.FreshUntil
}

// A group that leaves this node keeps its Lease until the responder has
// its address out: another node that takes the Lease never answers beside
// this one. Meanwhile the address is answered only as long as the
// group's own Lease allows.
func TestLeavingGroupReleasedOnceOut(t *testing.T) {
	w := newLeavingWorld(t)
	now := time.Now()
	sel := groupOf("web", "198.18.0.1")
	other := groupOf("db", "198.18.0.2")
	sel["db"] = other["db"]
	campaigns := map[string]*campaign{"web": w.held("web", now.Add(2*time.Second)), "db": w.held("db", now.Add(10*time.Second))}
	gone := map[string]leaving{}
	w.sync(sel, campaigns, gone)
	w.responderDone()

	// web leaves this node.
	w.follow(context.Background(), sel, other, campaigns, gone)
	w.sync(other, campaigns, gone)
	if en, ok := w.entry("198.18.0.1"); !ok || !en.Withdrawn || en.Out() {
		t.Fatalf("web's entry %+v (in the table: %v), want withdrawn, pending", en, ok)
	}
	if got, want := w.freshUntil(), now.Add(2*time.Second); !got.Equal(want) {
		t.Errorf("deadline %s while web's entry is withdrawn, want web's Lease's %s", got, want)
	}
	if r := release(w.DB.ReadTxn(), w.Announce, gone); len(r) != 0 || len(w.released) != 0 {
		t.Fatalf("released %v before the responder took web's entry out", w.released)
	}

	w.responderDone()
	w.sync(other, campaigns, gone)
	if r := release(w.DB.ReadTxn(), w.Announce, gone); len(r) != 1 || !w.released["web"] || len(gone) != 0 {
		t.Fatalf("released %v (gone %v), want web, with its entry out", w.released, gone)
	}
	w.sync(other, campaigns, gone)
	if _, ok := w.entry("198.18.0.1"); ok {
		t.Error("web's entry still in the table once out")
	}
	if got, want := w.freshUntil(), now.Add(10*time.Second); !got.Equal(want) {
		t.Errorf("deadline %s once web is released, want db's %s", got, want)
	}
}

// A group back before its Lease was released resumes its campaign and is
// answered again.
func TestLeavingGroupComesBack(t *testing.T) {
	w := newLeavingWorld(t)
	sel := groupOf("web", "198.18.0.1")
	c := w.held("web", time.Now().Add(5*time.Second))
	campaigns, gone := map[string]*campaign{"web": c}, map[string]leaving{}
	w.sync(sel, campaigns, gone)
	w.responderDone()
	w.follow(context.Background(), sel, selection{}, campaigns, gone)
	w.sync(selection{}, campaigns, gone)

	w.follow(context.Background(), selection{}, sel, campaigns, gone)
	if campaigns["web"] != c || len(gone) != 0 {
		t.Fatalf("campaigns %v, gone %v: want web's campaign resumed", campaigns, gone)
	}
	w.sync(sel, campaigns, gone)
	if en, ok := w.entry("198.18.0.1"); !ok || en.Withdrawn {
		t.Fatalf("web's entry %+v (in the table: %v), want answered again", en, ok)
	}
	if len(w.released) != 0 {
		t.Errorf("released %v", w.released)
	}
}

// A stopping agent releases its Leases once the responder has every entry
// out, and publishes no deadline any more.
func TestStopReleasesOnceOut(t *testing.T) {
	w := newLeavingWorld(t)
	sel := groupOf("web", "198.18.0.1")
	campaigns := map[string]*campaign{"web": w.held("web", time.Now().Add(5*time.Second))}
	w.sync(sel, campaigns, map[string]leaving{})
	w.responderDone()
	go func() {
		// The responder takes the entries out once they are withdrawn.
		for {
			all, changed := w.Announce.AllWatch(w.DB.ReadTxn())
			for en := range all {
				if en.Withdrawn {
					w.responderDone()
					return
				}
			}
			<-changed
		}
	}()
	w.stopAll(campaigns, map[string]leaving{}, nil)
	if !w.released["web"] {
		t.Errorf("released %v, want web with every entry out", w.released)
	}
	if !w.freshUntil().IsZero() {
		t.Errorf("deadline %s after stopping", w.freshUntil())
	}
}
