package withdraw

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/tables"
)

// A stopping node leaves at once only when the responder has confirmed
// every entry out of its maps; otherwise it waits for its deadline.
func TestWait(t *testing.T) {
	entry := func(ip string, withdrawn bool, status reconciler.Status) *tables.L2AnnounceEntry {
		return &tables.L2AnnounceEntry{IP: netip.MustParseAddr(ip), NetworkInterface: "eth0", Withdrawn: withdrawn, Status: status}
	}
	for _, tc := range []struct {
		name    string
		entries []*tables.L2AnnounceEntry
		// confirm is what the responder reports while the node waits.
		confirm []*tables.L2AnnounceEntry
		want    bool
	}{
		{name: "no entries prove nothing", want: false},
		{name: "all withdrawn and done",
			entries: []*tables.L2AnnounceEntry{entry("198.18.0.1", true, reconciler.StatusDone()), entry("198.18.0.2", true, reconciler.StatusDone())},
			want:    true},
		{name: "one still pending",
			entries: []*tables.L2AnnounceEntry{entry("198.18.0.1", true, reconciler.StatusDone()), entry("198.18.0.2", true, reconciler.StatusPending())},
			want:    false},
		{name: "a withdrawal failed",
			entries: []*tables.L2AnnounceEntry{entry("198.18.0.1", true, reconciler.StatusError(errors.New("map full")))},
			want:    false},
		{name: "done but answering (not withdrawn)",
			entries: []*tables.L2AnnounceEntry{entry("198.18.0.1", false, reconciler.StatusDone())},
			want:    false},
		{name: "confirmed while waiting",
			entries: []*tables.L2AnnounceEntry{entry("198.18.0.1", true, reconciler.StatusPending())},
			confirm: []*tables.L2AnnounceEntry{entry("198.18.0.1", true, reconciler.StatusDone())},
			want:    true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := statedb.New()
			announce, err := tables.NewL2AnnounceTable(db)
			if err != nil {
				t.Fatal(err)
			}
			wtxn := db.WriteTxn(announce)
			for _, en := range tc.entries {
				_, _, _ = announce.Insert(wtxn, en)
			}
			wtxn.Commit()
			if tc.confirm != nil {
				go func() {
					time.Sleep(50 * time.Millisecond)
					wtxn := db.WriteTxn(announce)
					for _, en := range tc.confirm {
						_, _, _ = announce.Insert(wtxn, en)
					}
					wtxn.Commit()
				}()
			}
			// Far enough for the confirmation to arrive first: a wrong
			// answer is a wrong bool, never a matter of timing.
			deadline := time.Now().Add(100 * time.Millisecond)
			if tc.confirm != nil {
				deadline = time.Now().Add(5 * time.Second)
			}
			if got := Wait(db, announce, deadline); got != tc.want {
				t.Errorf("Wait = %v, want %v", got, tc.want)
			}
		})
	}
}

// All marks every entry withdrawn and pending, for the responder.
func TestAll(t *testing.T) {
	db := statedb.New()
	announce, err := tables.NewL2AnnounceTable(db)
	if err != nil {
		t.Fatal(err)
	}
	wtxn := db.WriteTxn(announce)
	_, _, _ = announce.Insert(wtxn, &tables.L2AnnounceEntry{IP: netip.MustParseAddr("198.18.0.1"), NetworkInterface: "eth0", Status: reconciler.StatusDone()})
	_, _, _ = announce.Insert(wtxn, &tables.L2AnnounceEntry{IP: netip.MustParseAddr("198.18.0.2"), NetworkInterface: "eth0", Withdrawn: true, Status: reconciler.StatusDone()})
	All(wtxn, announce)
	wtxn.Commit()
	for en := range announce.All(db.ReadTxn()) {
		if !en.Withdrawn {
			t.Errorf("%s not withdrawn", en.IP)
		}
		// Already out: nothing for the responder to do again.
		wantDone := en.IP == netip.MustParseAddr("198.18.0.2")
		if done := en.Status.Kind == reconciler.StatusKindDone; done != wantDone {
			t.Errorf("%s: status %s", en.IP, en.Status.Kind)
		}
	}
}
