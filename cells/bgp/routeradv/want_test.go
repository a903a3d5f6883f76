package routeradv

import (
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// Every unnumbered peer's interface is advertised on, once, whether or not
// the peer is known yet (then the node solicits too); numbered peers and
// instances that do not run are not.
func TestInterfaces(t *testing.T) {
	insts := []*tables.BGPInstance{
		{Name: "a", Peers: []tables.BGPPeer{
			{Name: "up", Unnumbered: true, Interface: "eth1", Address: netip.MustParseAddr("fe80::1%eth1")},
			{Name: "not seen yet", Unnumbered: true, Interface: "eth0", Error: "autoDiscovery: no IPv6 link-local router seen on interface eth0 yet"},
			{Name: "numbered link-local", Interface: "eth2", Address: netip.MustParseAddr("fe80::2%eth2")},
			{Name: "numbered", Address: netip.MustParseAddr("198.18.0.1")},
			{Name: "no interface yet", Unnumbered: true, Error: "autoDiscovery: the node has no ipv6 default route"},
		}},
		{Name: "b", Peers: []tables.BGPPeer{{Name: "same link", Unnumbered: true, Interface: "eth1", Address: netip.MustParseAddr("fe80::1%eth1")}}},
		{Name: "c", Error: "no router ID", Peers: []tables.BGPPeer{{Name: "x", Unnumbered: true, Interface: "eth3"}}},
	}
	seq := func(yield func(*tables.BGPInstance, statedb.Revision) bool) {
		for i, inst := range insts {
			if !yield(inst, statedb.Revision(i)) {
				return
			}
		}
	}
	if got, want := interfaces(seq), map[string]bool{"eth0": true, "eth1": false}; !maps.Equal(got, want) {
		t.Errorf("interfaces %v, want %v", got, want)
	}
}

// Only the interfaces the node has, with an IPv6 link-local address, are
// advertised on; the others wait, and say so.
func TestOnLink(t *testing.T) {
	ll := []tables.DeviceAddress{{Addr: netip.MustParseAddr("fe80::1"), Scope: 253, PrefixLen: 64}}
	global := []tables.DeviceAddress{{Addr: netip.MustParseAddr("fd00:18::1"), PrefixLen: 64}, {Addr: netip.MustParseAddr("198.18.0.1"), PrefixLen: 24}}
	devs := []*tables.Device{
		{Index: 1, Name: "eth0", Addresses: ll},
		{Index: 2, Name: "eth1", Addresses: global}, // no link-local (IPv6 off, or not up yet)
		{Index: 3, Name: "eth9", Addresses: ll},     // not a peer's
	}
	seq := func(yield func(*tables.Device, statedb.Revision) bool) {
		for i, d := range devs {
			if !yield(d, statedb.Revision(i)) {
				return
			}
		}
	}
	ready, missing := onLink(map[string]bool{"eth0": true, "eth1": false, "eth2": false}, seq)
	if want := map[string]bool{"eth0": true}; !maps.Equal(ready, want) {
		t.Errorf("ready %v, want %v", ready, want)
	}
	if want := []string{"eth1", "eth2"}; !slices.Equal(missing, want) {
		t.Errorf("missing %v, want %v", missing, want)
	}
	if got, want := describe([]string{"eth0"}, missing), "advertising on eth0; waiting for eth1, eth2"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	if got, want := describe(nil, nil), "advertising on no interface"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}
