package routeradv

import (
	"maps"
	"net/netip"
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
