package responder

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/heraldlb/herald/tables"
)

func TestWaitlist(t *testing.T) {
	entry := func(ip string, ifindex int, mac string) *tables.L2AnnounceEntry {
		return &tables.L2AnnounceEntry{IP: netip.MustParseAddr(ip), Ifindex: ifindex, MAC: mac}
	}
	ips := func(es []*tables.L2AnnounceEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.IP.String())
		}
		slices.Sort(out)
		return out
	}
	const macA, macB = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
	w := newWaitlist()
	a1 := entry("198.18.18.1", 2, macA)
	a2 := entry("198.18.18.2", 2, macA)
	b1 := entry("198.18.18.3", 3, macB)
	for _, e := range []*tables.L2AnnounceEntry{a1, a2, b1} {
		w.add(e)
	}
	eth := port{2, macA}
	if !w.has(keyOf(a1)) || w.has(entryKey{netip.MustParseAddr("198.18.18.9"), 2}) {
		t.Fatal("has: a1 waits, 198.18.18.9 does not")
	}
	if got := ips(w.on(eth, nil)); !slices.Equal(got, []string{"198.18.18.1", "198.18.18.2"}) {
		t.Fatalf("on(eth) = %v, want both addresses of ifindex 2", got)
	}
	if got := ips(w.on(eth, map[entryKey]bool{keyOf(a1): true})); !slices.Equal(got, []string{"198.18.18.2"}) {
		t.Fatalf("on(eth) but the batch's = %v", got)
	}
	// A newer version of an entry moves it to its new port.
	a2moved := entry("198.18.18.2", 2, macB)
	w.add(a2moved)
	if got := ips(w.on(eth, nil)); !slices.Equal(got, []string{"198.18.18.1"}) {
		t.Fatalf("after a2 changed MAC: on(eth) = %v", got)
	}
	if got := ips(w.on(port{2, macB}, nil)); !slices.Equal(got, []string{"198.18.18.2"}) {
		t.Fatalf("after a2 changed MAC: on(new port) = %v", got)
	}
	w.remove(keyOf(a1))
	w.retain(map[entryKey]bool{keyOf(a2moved): true})
	if len(w.m) != 1 || len(w.on(port{3, macB}, nil)) != 0 {
		t.Fatalf("after remove and retain: %d waiting, b1 still there: %v", len(w.m), w.on(port{3, macB}, nil))
	}
}
