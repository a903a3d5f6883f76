package gateways

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/heraldlb/herald/tables"
)

func TestPick(t *testing.T) {
	a := netip.MustParseAddr
	def := netip.Prefix{}
	for _, c := range []struct {
		name   string
		routes []route
		want   []*tables.BGPDefaultGateway
	}{
		{"none", nil, []*tables.BGPDefaultGateway{}},
		{"only connected routes", []route{{dst: netip.MustParsePrefix("198.18.44.0/24"), device: "eth0"}}, []*tables.BGPDefaultGateway{}},
		{"a non-default route with a gateway", []route{{dst: netip.MustParsePrefix("198.18.60.0/24"), gateway: a("198.18.44.2"), device: "eth0"}}, []*tables.BGPDefaultGateway{}},
		{"a default route without gateway (a device route)", []route{{dst: def, device: "tun0"}}, []*tables.BGPDefaultGateway{}},
		{"both families", []route{
			{dst: def, gateway: a("fd00:18:0:44::2"), device: "eth0", metric: 1024},
			{dst: netip.MustParsePrefix("0.0.0.0/0"), gateway: a("198.18.44.2"), device: "eth0"},
		}, []*tables.BGPDefaultGateway{
			{Family: "ipv4", Gateway: a("198.18.44.2"), Device: "eth0"},
			{Family: "ipv6", Gateway: a("fd00:18:0:44::2"), Device: "eth0", Metric: 1024},
		}},
		{"the lowest metric", []route{
			{dst: def, gateway: a("198.18.44.3"), device: "eth1", metric: 200},
			{dst: def, gateway: a("198.18.44.9"), device: "eth0", metric: 100},
		}, []*tables.BGPDefaultGateway{{Family: "ipv4", Gateway: a("198.18.44.9"), Device: "eth0", Metric: 100}}},
		{"equal metrics: the lowest gateway", []route{
			{dst: def, gateway: a("198.18.44.9"), device: "eth0"},
			{dst: def, gateway: a("198.18.44.3"), device: "eth1"},
		}, []*tables.BGPDefaultGateway{{Family: "ipv4", Gateway: a("198.18.44.3"), Device: "eth1"}}},
		{"a link-local gateway carries its device", []route{{dst: def, gateway: a("fe80::1"), device: "eth0"}},
			[]*tables.BGPDefaultGateway{{Family: "ipv6", Gateway: a("fe80::1").WithZone("eth0"), Device: "eth0"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := pick(c.routes); !reflect.DeepEqual(got, c.want) {
				t.Errorf("pick = %v, want %v", got, c.want)
			}
		})
	}
}

// The rows of bgp-link-neighbors are the IPv6 link-local neighbours that
// did not fail, once each, by device and address; a router stays one while
// the kernel keeps it, whatever its flag says later.
func TestNeighborRows(t *testing.T) {
	a := netip.MustParseAddr
	got, seen := neighborRows([]neighbor{
		{device: "eth1", addr: a("fe80::2"), router: true},
		{device: "eth0", addr: a("fe80::9"), router: true},
		{device: "eth0", addr: a("fe80::1"), router: true},
		{device: "eth0", addr: a("fe80::1"), router: true},               // listed twice
		{device: "eth0", addr: a("fe80::3")},                             // a host
		{device: "eth0", addr: a("fe80::4"), router: true, failed: true}, // did not answer
		{device: "eth0", addr: a("fd00:18::1"), router: true},            // not link-local
		{device: "", addr: a("fe80::5"), router: true},                   // its device is gone
	}, nil)
	want := []*tables.BGPLinkNeighbor{
		{Device: "eth0", Address: a("fe80::1"), Router: true},
		{Device: "eth0", Address: a("fe80::3")},
		{Device: "eth0", Address: a("fe80::9"), Router: true},
		{Device: "eth1", Address: a("fe80::2"), Router: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}

	// eth1's router sends a Neighbor Advertisement without the flag; eth0's
	// fe80::9 leaves the kernel's table, and fe80::3 becomes a router.
	got, seen = neighborRows([]neighbor{
		{device: "eth1", addr: a("fe80::2")},
		{device: "eth0", addr: a("fe80::1"), router: true},
		{device: "eth0", addr: a("fe80::3"), router: true},
	}, seen)
	want = []*tables.BGPLinkNeighbor{
		{Device: "eth0", Address: a("fe80::1"), Router: true},
		{Device: "eth0", Address: a("fe80::3"), Router: true},
		{Device: "eth1", Address: a("fe80::2"), Router: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("second listing: rows %v, want %v", got, want)
	}
	// Gone from the kernel's table is gone: back as a host, it is one.
	got, _ = neighborRows([]neighbor{{device: "eth0", addr: a("fe80::9")}}, seen)
	if want := []*tables.BGPLinkNeighbor{{Device: "eth0", Address: a("fe80::9")}}; !reflect.DeepEqual(got, want) {
		t.Errorf("third listing: rows %v, want %v", got, want)
	}
}

// The interfaces watched are those the cluster configs name, and the
// default routes' of the families unnumbered peers follow.
func TestInterest(t *testing.T) {
	ccs := []*tables.BGPClusterConfig{
		{Name: "a", Instances: []tables.BGPInstanceSpec{{Peers: []tables.BGPPeerSpec{
			{Name: "named", Unnumbered: true, Interface: "eth2"},
			{Name: "by route", Unnumbered: true, UnnumberedFamily: "ipv6"},
			{Name: "numbered", Address: netip.MustParseAddr("198.18.0.1")},
		}}}},
		{Name: "b", Instances: []tables.BGPInstanceSpec{{Peers: []tables.BGPPeerSpec{
			{Name: "link-local", Address: netip.MustParseAddr("fe80::1"), Interface: "eth3"},
			{Name: "again", Unnumbered: true, Interface: "eth2"},
		}}}},
	}
	gws := []*tables.BGPDefaultGateway{{Family: "ipv4", Device: "eth0"}, {Family: "ipv6", Device: "eth1"}}
	if got, want := interest(ccs, gws), []string{"eth1", "eth2", "eth3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("interest %v, want %v", got, want)
	}
	if got := interest(nil, gws); len(got) != 0 {
		t.Errorf("without unnumbered peers: interest %v, want none", got)
	}
}
