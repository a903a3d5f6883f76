package devices

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/heraldlb/herald/tables"
)

func TestSelectDevice(t *testing.T) {
	const up = net.FlagUp | net.FlagBroadcast | net.FlagMulticast | net.FlagRunning
	mac := tables.HardwareAddr{0x02, 0x42, 0xac, 0x13, 0x00, 0x03}
	global := []tables.DeviceAddress{{Addr: netip.MustParseAddr("198.18.5.1")}}
	global6 := []tables.DeviceAddress{{Addr: netip.MustParseAddr("fd00:5::1")}}
	linkLocal := []tables.DeviceAddress{{Addr: netip.MustParseAddr("fe80::1"), Scope: 253}}

	tests := []struct {
		name     string
		dev      tables.Device
		master   string
		patterns []string
		selected bool
		reason   string
	}{
		// Default: a MAC and a global unicast address.
		{name: "up with IPv4", dev: tables.Device{Name: "eth0", HWAddr: mac, Flags: up, Addresses: global}, selected: true},
		{name: "up with IPv6 only", dev: tables.Device{Name: "eth0", HWAddr: mac, Flags: up, Addresses: global6}, selected: true},
		{name: "up without running", dev: tables.Device{Name: "eth0", HWAddr: mac, Flags: net.FlagUp, Addresses: global}, selected: true},
		{name: "link-local only", dev: tables.Device{Name: "lxc1", HWAddr: mac, Flags: up, Addresses: linkLocal}, reason: "no global unicast address"},
		{name: "no address", dev: tables.Device{Name: "dummy0", HWAddr: mac, Flags: up}, reason: "no global unicast address"},
		{
			name: "loopback",
			dev: tables.Device{Name: "lo", Flags: net.FlagUp | net.FlagLoopback,
				Addresses: []tables.DeviceAddress{{Addr: netip.MustParseAddr("127.0.0.1"), Scope: 254}}},
			reason: "loopback",
		},
		{name: "loopback even if named", dev: tables.Device{Name: "lo", Flags: net.FlagUp | net.FlagLoopback}, patterns: []string{"lo"}, reason: "loopback"},
		{name: "tun without MAC", dev: tables.Device{Name: "tun0", Flags: up, Addresses: global}, reason: "no hardware address"},
		{name: "all-zero MAC", dev: tables.Device{Name: "x0", HWAddr: tables.HardwareAddr{0, 0, 0, 0, 0, 0}, Flags: up, Addresses: global}, reason: "no hardware address"},
		{name: "IP tunnel's address is no MAC", dev: tables.Device{Name: "ipip0", HWAddr: tables.HardwareAddr{198, 18, 0, 1}, Flags: up, Addresses: global}, reason: "no hardware address"},
		{name: "named but without MAC", dev: tables.Device{Name: "tun0", Flags: up, Addresses: global}, patterns: []string{"tun0"}, reason: "no hardware address"},
		{name: "down", dev: tables.Device{Name: "eth0", HWAddr: mac, Flags: net.FlagBroadcast, Addresses: global}, reason: "down"},
		{name: "down and named", dev: tables.Device{Name: "eth0", HWAddr: mac, Addresses: global}, patterns: []string{"eth0"}, reason: "down"},
		{name: "bridge port", dev: tables.Device{Name: "veth1", HWAddr: mac, Flags: up, MasterIndex: 7, Addresses: global}, master: "br0", reason: "enslaved to br0"},
		{name: "bridge port, named", dev: tables.Device{Name: "veth1", HWAddr: mac, Flags: up, MasterIndex: 7}, master: "br0", patterns: []string{"veth1"}, reason: "enslaved to br0"},

		// --devices: exactly the matching devices with a MAC.
		{name: "named without address", dev: tables.Device{Name: "dummy0", HWAddr: mac, Flags: up}, patterns: []string{"dummy0"}, selected: true},
		{name: "not named", dev: tables.Device{Name: "eth1", HWAddr: mac, Flags: up, Addresses: global}, patterns: []string{"eth0"}, reason: "not matched by --devices"},
		{name: "regexp", dev: tables.Device{Name: "eth12", HWAddr: mac, Flags: up}, patterns: []string{"eth[0-9]+"}, selected: true},
		{name: "regexp matches the whole name", dev: tables.Device{Name: "veth12", HWAddr: mac, Flags: up, Addresses: global}, patterns: []string{"eth[0-9]+"}, reason: "not matched by --devices"},
		{name: "name is no prefix", dev: tables.Device{Name: "eth0.100", HWAddr: mac, Flags: up, Addresses: global}, patterns: []string{"eth0"}, reason: "not matched by --devices"},
		{name: "second pattern", dev: tables.Device{Name: "bond0", HWAddr: mac, Flags: up}, patterns: []string{"eth0", " bond0 "}, selected: true},
		{name: "alternation stays anchored", dev: tables.Device{Name: "xeth0", HWAddr: mac, Flags: up, Addresses: global}, patterns: []string{"eth0|eth1"}, reason: "not matched by --devices"},
		{name: "empty entries mean no patterns", dev: tables.Device{Name: "eth0", HWAddr: mac, Flags: up}, patterns: []string{"", " "}, reason: "no global unicast address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pats, err := parsePatterns(tt.patterns)
			if err != nil {
				t.Fatal(err)
			}
			selected, reason := selectDevice(&tt.dev, tt.master, pats)
			if selected != tt.selected || reason != tt.reason {
				t.Errorf("selectDevice() = %v, %q; want %v, %q", selected, reason, tt.selected, tt.reason)
			}
		})
	}
}

func TestParsePatternsInvalid(t *testing.T) {
	for _, bad := range []string{"eth[0-9", "(eth0", "eth0)", "*"} {
		_, err := parsePatterns([]string{"eth0", bad})
		if err == nil {
			t.Errorf("%q: no error", bad)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "devices: ") || !strings.Contains(msg, `"`+bad+`"`) {
			t.Errorf("%q: error %q does not name the flag and the pattern", bad, msg)
		}
	}
}
