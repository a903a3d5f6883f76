package responder

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/tables"
)

func TestConflictsReportedOnce(t *testing.T) {
	events := record.NewFakeRecorder(10)
	c := newConflicts("node1", slog.New(slog.DiscardHandler), events)
	e := &tables.L2AnnounceEntry{IP: netip.MustParseAddr("198.18.0.200"), NetworkInterface: "eth0", Ifindex: 2, Origins: []string{"ns/a", "ns/b"}}
	rogue := net.HardwareAddr{0x02, 0xcc, 0, 0, 0, 3}
	other := net.HardwareAddr{0x02, 0xcc, 0, 0, 0, 4}

	err := c.found(e, rogue, whenProbing)
	if !errors.Is(err, errAddressConflict) || !strings.Contains(err.Error(), rogue.String()) {
		t.Fatalf("probe conflict: %v, want an address conflict naming %s", err, rogue)
	}
	if n := len(events.Events); n != 2 {
		t.Fatalf("%d Events, want one per Service (2)", n)
	}
	for range 2 {
		if ev := <-events.Events; !strings.Contains(ev, "Warning L2AddressConflict") || !strings.Contains(ev, rogue.String()) {
			t.Fatalf("Event %q", ev)
		}
	}
	// The retry finds the same host: still an error, no new Event.
	if err := c.found(e, rogue, whenProbing); err == nil || len(events.Events) != 0 {
		t.Fatalf("same conflict again: %v, %d Events", err, len(events.Events))
	}
	// Another host: reported.
	_ = c.found(e, other, whenProbing)
	if len(events.Events) != 2 {
		t.Fatalf("a new other host: %d Events, want 2", len(events.Events))
	}
	<-events.Events
	<-events.Events
	// While announcing: reported, and no error (the entry stays).
	if err := c.found(e, rogue, whenAnnouncing); err != nil || len(events.Events) != 2 {
		t.Fatalf("while announcing: %v, %d Events", err, len(events.Events))
	}
	<-events.Events
	<-events.Events
	// Once the entry is gone, the same conflict is news again.
	c.forget(e)
	_ = c.found(e, rogue, whenProbing)
	if len(events.Events) != 2 {
		t.Fatalf("after forget: %d Events, want 2", len(events.Events))
	}
	if got := testutil.ToFloat64(c.counter.WithLabelValues(whenProbing)); got != 3 {
		t.Errorf("herald_l2_address_conflicts_total{when=probe} = %v, want 3", got)
	}
}
