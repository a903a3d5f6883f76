package desired

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/heraldlb/herald/tables"
)

func TestRouterID(t *testing.T) {
	mac := func(s string) tables.HardwareAddr {
		m, err := net.ParseMAC(s)
		if err != nil {
			t.Fatal(err)
		}
		return tables.HardwareAddr(m)
	}
	dev := func(name, hw string, addrs ...string) *tables.Device {
		d := &tables.Device{Name: name}
		if hw != "" {
			d.HWAddr = mac(hw)
		}
		for _, a := range addrs {
			d.Addresses = append(d.Addresses, tables.DeviceAddress{Addr: netip.MustParseAddr(a)})
		}
		return d
	}
	nodeWith := func(ips ...string) *tables.Node {
		n := &tables.Node{Name: "node1"}
		for _, ip := range ips {
			n.InternalIPs = append(n.InternalIPs, netip.MustParseAddr(ip))
		}
		return n
	}
	devices := []*tables.Device{
		dev("lo", "", "127.0.0.1", "::1"),
		dev("eth0", "02:42:c6:12:2c:0b", "198.18.44.11", "fd00:18:0:44::11"),
		dev("tun0", "", "fd00:99::1"),
		dev("eth9", "00:00:00:00:00:00", "fd00:98::1"),
	}
	for _, c := range []struct {
		name    string
		self    *tables.Node
		want    string
		wantErr string
	}{
		{"the IPv4 InternalIP", nodeWith("fd00:18:0:44::11", "198.18.44.11"), "198.18.44.11", ""},
		{"IPv6-only: the MAC's last four bytes of the device with the InternalIP", nodeWith("fd00:18:0:44::11"), "198.18.44.11", ""},
		{"IPv6-only, no device holds the address", nodeWith("fd00:18:0:77::1"), "", "no device holds its InternalIP fd00:18:0:77::1"},
		{"IPv6-only, the device has no MAC", nodeWith("fd00:99::1"), "", "device tun0 (holding its InternalIP fd00:99::1) has no MAC address"},
		{"IPv6-only, an all-zero MAC gives no router ID", nodeWith("fd00:98::1"), "", "device eth9"},
		{"no InternalIP at all", nodeWith(), "", "the node has no InternalIP"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, errMsg := routerID(c.self, devices)
			got := ""
			if id.IsValid() {
				got = id.String()
			}
			if got != c.want || (c.wantErr == "") != (errMsg == "") || !strings.Contains(errMsg, c.wantErr) {
				t.Errorf("routerID = %q, %q; want %q, error containing %q", got, errMsg, c.want, c.wantErr)
			}
		})
	}
}
