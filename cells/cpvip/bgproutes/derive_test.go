package bgproutes

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
	"github.com/heraldlb/herald/tables"
)

func TestInstanceAndRoutes(t *testing.T) {
	b := &cpvipconfig.BGP{LocalASN: 65010, RouterID: netip.MustParseAddr("198.18.40.11"), HoldTime: 9 * time.Second,
		Peers: []cpvipconfig.BGPPeer{{Addr: netip.MustParseAddr("198.18.40.254"), ASN: 65000}}}
	vip4, vip6 := netip.MustParseAddr("198.18.40.100"), netip.MustParseAddr("fd00:18:0:40::100")

	inst := instance(b, []netip.Addr{vip4, vip6})
	if len(inst.Peers) != 1 || !slices.Equal(inst.Peers[0].Families, []string{"ipv4-unicast", "ipv6-unicast"}) ||
		inst.Peers[0].HoldTimeSeconds != 9 || inst.Peers[0].KeepAliveSeconds != 3 || inst.ListenPort != -1 {
		t.Fatalf("instance %+v", inst)
	}
	if f := instance(b, []netip.Addr{vip4}).Peers[0].Families; !slices.Equal(f, []string{"ipv4-unicast"}) {
		t.Fatalf("IPv4 VIPs only: families %v", f)
	}
	if inst.Peers[0].BFD != nil {
		t.Fatalf("BFD %+v without bgp-bfd-interval", inst.Peers[0].BFD)
	}
	b.BFD = &tables.BGPBFD{ReceiveIntervalMs: 100, TransmitIntervalMs: 100, DetectMultiplier: 3}
	if got := instance(b, []netip.Addr{vip4}).Peers[0].BFD; got == nil || *got != *b.BFD {
		t.Fatalf("BFD %+v, want %+v", got, b.BFD)
	}
	b.BFD = nil

	entries := []*tables.L2AnnounceEntry{{IP: vip4}, {IP: vip6}}
	var got []string
	for _, r := range routes(b, entries) {
		got = append(got, r.Key())
	}
	want := []string{"control-plane-vip/router-198.18.40.254/198.18.40.100/32", "control-plane-vip/router-198.18.40.254/fd00:18:0:40::100/128"}
	if !slices.Equal(got, want) {
		t.Fatalf("routes %v, want %v", got, want)
	}
	entries[0].Withdrawn, entries[1].Withdrawn = true, true
	if r := routes(b, entries); len(r) != 0 {
		t.Fatalf("withdrawn entries still advertised: %v", r)
	}
}
