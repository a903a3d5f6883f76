package speaker

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/heraldlb/herald/tables"
)

func addrs(ss ...string) []tables.DeviceAddress {
	var out []tables.DeviceAddress
	for _, s := range ss {
		scope := tables.ScopeUniverse
		a := netip.MustParseAddr(s)
		if a.IsLinkLocalUnicast() {
			scope = 253
		}
		out = append(out, tables.DeviceAddress{Addr: a, Scope: scope})
	}
	return out
}

func TestNeedsIPv6NextHop(t *testing.T) {
	for _, c := range []struct {
		addr     string
		families []string
		want     bool
	}{
		{"198.18.44.2", []string{"ipv4-unicast", "ipv6-unicast"}, true},
		{"198.18.44.2", []string{"ipv6-unicast"}, true},
		{"198.18.44.2", []string{"ipv4-unicast"}, false},
		{"fd00:18:0:44::2", []string{"ipv4-unicast", "ipv6-unicast"}, false}, // the session's own address is IPv6
	} {
		p := tables.BGPPeer{Address: netip.MustParseAddr(c.addr), Families: c.families}
		if got := needsIPv6NextHop(p); got != c.want {
			t.Errorf("%s %v: got %v, want %v", c.addr, c.families, got, c.want)
		}
	}
}

func TestChooseIPv6NextHop(t *testing.T) {
	peer := tables.BGPPeer{Name: "tor", Address: netip.MustParseAddr("198.18.44.2")}
	for _, c := range []struct {
		name    string
		dev     *tables.Device
		err     error
		want    string // "" = none
		problem string // a part of the problem
	}{
		{name: "global address", dev: &tables.Device{Name: "eth0", Addresses: addrs("198.18.44.11", "fd00:18:0:44::11", "fe80::1")},
			want: "fd00:18:0:44::11"},
		{name: "first of several, as sorted", dev: &tables.Device{Name: "eth0", Addresses: addrs("fd00:18:0:44::11", "fd00:18:0:44::99")},
			want: "fd00:18:0:44::11"},
		{name: "link-local only", dev: &tables.Device{Name: "eth0", Addresses: addrs("198.18.44.11", "fe80::1")},
			problem: "eth0, the interface toward 198.18.44.2, has no global IPv6 address"},
		{name: "IPv4 only", dev: &tables.Device{Name: "eth1", Addresses: addrs("198.18.44.11")},
			problem: "eth1, the interface toward 198.18.44.2"},
		{name: "IPv4-mapped is no IPv6 address", dev: &tables.Device{Name: "eth0", Addresses: addrs("::ffff:198.18.44.11")},
			problem: "has no global IPv6 address"},
		{name: "host scope", dev: &tables.Device{Name: "eth0", Addresses: []tables.DeviceAddress{{Addr: netip.MustParseAddr("fd00::1"), Scope: 254}}},
			problem: "has no global IPv6 address"},
		{name: "interface unknown", err: errors.New("no route to it"), problem: "the interface toward 198.18.44.2 is not known: no route to it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := chooseIPv6NextHop(peer, c.dev, c.err)
			if c.want != "" {
				if got.addr != netip.MustParseAddr(c.want) || got.problem != "" {
					t.Errorf("got %+v, want %s", got, c.want)
				}
				return
			}
			if got.addr.IsValid() || !strings.Contains(got.problem, c.problem) {
				t.Errorf("got %+v, want no address and a problem with %q", got, c.problem)
			}
		})
	}
}

func TestDeviceWithAddr(t *testing.T) {
	devs := []*tables.Device{{Name: "lo", Addresses: addrs("127.0.0.1")}, {Name: "eth1", Addresses: addrs("198.18.45.11", "fd00:18:0:45::11")}}
	if d := deviceWithAddr(devs, netip.MustParseAddr("198.18.45.11")); d == nil || d.Name != "eth1" {
		t.Errorf("got %+v", d)
	}
	if d := deviceWithAddr(devs, netip.MustParseAddr("198.18.46.11")); d != nil {
		t.Errorf("got %+v for an address no device has", d)
	}
}

// exportsOf sends an IPv6 prefix to an IPv4 peer with its next hop, and
// not at all when it has none; IPv4 prefixes and IPv6 peers are as
// before.
func TestExportsOfNextHop(t *testing.T) {
	v4peer, v6peer, bare := netip.MustParseAddr("198.18.44.2"), netip.MustParseAddr("fd00:18:0:44::2"), netip.MustParseAddr("198.18.44.3")
	hops := map[string]nextHop6{
		"tor4": {addr: netip.MustParseAddr("fd00:18:0:44::11")},
		"bare": {problem: "no global IPv6 address"},
	}
	routes := []*tables.BGPRoute{{Peer: "tor4", PeerAddress: v4peer}, {Peer: "tor6", PeerAddress: v6peer}, {Peer: "bare", PeerAddress: bare}}
	for _, c := range []struct {
		prefix string
		want   map[string]string // peer → next hop ("" none named)
	}{
		{"fd00:18:0:45::1/128", map[string]string{"tor4": "fd00:18:0:44::11", "tor6": ""}},
		{"198.18.56.1/32", map[string]string{"tor4": "", "tor6": "", "bare": ""}},
	} {
		want, _ := exportsOf(netip.MustParsePrefix(c.prefix), routes, hops)
		if len(want) != len(c.want) {
			t.Errorf("%s: exports %+v, want peers %v", c.prefix, want, c.want)
		}
		for peer, nh := range c.want {
			k, ok := want[peer]
			if !ok || (nh == "" && k.nextHop.IsValid()) || (nh != "" && k.nextHop != netip.MustParseAddr(nh)) {
				t.Errorf("%s to %s: %+v (present %v), want next hop %q", c.prefix, peer, k, ok, nh)
			}
		}
	}
}

func TestNextHopChanges(t *testing.T) {
	a := nextHop6{addr: netip.MustParseAddr("fd00::1")}
	old := map[string]nextHop6{"same": a, "gone": a, "moved": a}
	cur := map[string]nextHop6{"same": a, "moved": {problem: "no address"}, "new": a}
	got := strings.Join(nextHopChanges(old, cur), ",")
	if got != "gone,moved,new" {
		t.Errorf("got %s", got)
	}
	if len(nextHopChanges(nil, map[string]nextHop6{})) != 0 {
		t.Error("nothing to nothing is a change")
	}
}
