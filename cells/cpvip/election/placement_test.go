package election

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/heraldlb/herald/tables"
)

func TestPlace(t *testing.T) {
	eth0 := &tables.Device{Index: 2, Name: "eth0", Selected: true, HWAddr: tables.HardwareAddr{2, 0, 0, 0, 0, 1}, Flags: net.FlagUp,
		Addresses: []tables.DeviceAddress{{Addr: netip.MustParseAddr("198.18.40.11"), PrefixLen: 24}, {Addr: netip.MustParseAddr("fd00:18:0:40::11"), PrefixLen: 64}}}
	eth1 := &tables.Device{Index: 3, Name: "eth1", Selected: false, HWAddr: tables.HardwareAddr{2, 0, 0, 0, 0, 2},
		Addresses: []tables.DeviceAddress{{Addr: netip.MustParseAddr("198.18.41.11"), PrefixLen: 24}}}
	vip4, vip6 := netip.MustParseAddr("198.18.40.100"), netip.MustParseAddr("fd00:18:0:40::100")
	for _, tc := range []struct {
		name    string
		vips    []netip.Addr
		devs    []*tables.Device
		want    []string // ip@device
		wantErr string
	}{
		{"both families", []netip.Addr{vip4, vip6}, []*tables.Device{eth0, eth1}, []string{"198.18.40.100@eth0", "fd00:18:0:40::100@eth0"}, ""},
		{"not selected does not count", []netip.Addr{netip.MustParseAddr("198.18.41.100")}, []*tables.Device{eth0, eth1}, nil, "198.18.41.100 is on no subnet"},
		{"one missing: none announced", []netip.Addr{vip4, netip.MustParseAddr("198.19.0.1")}, []*tables.Device{eth0}, nil, "VIP 198.19.0.1 is on no subnet of a selected device (eth0:198.18.40.0/24, eth0:fd00:18:0:40::/64)"},
		{"the VIP as an address does not count", []netip.Addr{netip.MustParseAddr("198.18.40.11")}, []*tables.Device{eth0}, nil, "on no subnet"},
		{"no device", []netip.Addr{vip4}, nil, nil, "(none selected)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := place(tc.vips, tc.devs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, e := range got {
				s = append(s, e.IP.String()+"@"+e.NetworkInterface)
				if e.MAC != eth0.HWAddr.String() || e.Ifindex != eth0.Index {
					t.Errorf("entry %+v: wrong device", e)
				}
			}
			if strings.Join(s, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("placed %v, want %v", s, tc.want)
			}
		})
	}
}
