package bfd

import (
	"net/netip"
	"testing"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

func TestDesiredSessions(t *testing.T) {
	fast := &tables.BGPBFD{ReceiveIntervalMs: 100, TransmitIntervalMs: 100, DetectMultiplier: 3}
	slow := &tables.BGPBFD{ReceiveIntervalMs: 300, TransmitIntervalMs: 300, DetectMultiplier: 3}
	a1, a2, a3 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("fd00::3")
	insts := []*tables.BGPInstance{
		{Name: "a", Peers: []tables.BGPPeer{
			{Name: "fast", Address: a1, BFD: fast},
			{Name: "plain", Address: a2},
			{Name: "broken", Address: a3, BFD: fast, Error: "no peer config"},
		}},
		{Name: "b", Peers: []tables.BGPPeer{
			{Name: "same", Address: a1, BFD: fast},
			{Name: "other", Address: a1, BFD: slow},
			{Name: "v6", Address: a3, BFD: slow, LocalAddress: netip.MustParseAddr("fd00::9")},
		}},
		{Name: "c", Error: "no router ID", Peers: []tables.BGPPeer{{Name: "x", Address: a2, BFD: fast}}},
	}
	seq := func(yield func(*tables.BGPInstance, statedb.Revision) bool) {
		for _, i := range insts {
			if !yield(i, 0) {
				return
			}
		}
	}
	got, conflicts := desiredSessions(seq)
	want := map[netip.Addr]want{a1: {cfg: *fast}, a3: {local: netip.MustParseAddr("fd00::9"), cfg: *slow}}
	if len(got) != len(want) || got[a1] != want[a1] || got[a3] != want[a3] {
		t.Fatalf("sessions %+v, want %+v", got, want)
	}
	if len(conflicts) != 1 {
		t.Fatalf("conflicts %q, want the one of peer \"other\"", conflicts)
	}
}
