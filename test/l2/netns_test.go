package l2

import (
	"fmt"
	"net/netip"

	"github.com/heraldlb/herald/test/netlab"
)

// The test LAN (test/netlab). Everything the harness creates is named with
// prefix, and every address is in 198.18.0.0/24 (part of the benchmarking
// range 198.18.0.0/15) or fd00:18:0:1::/64 (unique local): nothing is ever
// sent anywhere else.
const (
	prefix  = "hl2-"
	devName = "eth0" // the device of every node and the client

	poolCIDR = "198.18.0.192/27"
	// poolCIDR6 is the pool's IPv6 block, on the LAN's IPv6 prefix (a
	// client solicits on-link addresses only).
	poolCIDR6 = "fd00:18:0:1::c0/123"

	// clientHostNum places the ARP client at 198.18.0.100, away from the
	// nodes (.11 upwards).
	clientHostNum = 100
	// rogueHostNum places the host that takes a VIP for itself (the
	// address conflict tests) at 198.18.0.150.
	rogueHostNum = 150
)

var (
	nodeNames = []string{"node1", "node2", "node3"}
	subnet    = netip.MustParsePrefix("198.18.0.0/24")
	subnet6   = netip.MustParsePrefix("fd00:18:0:1::/64")
	// macPrefix: every device on the LAN has the MAC address
	// 02:48:4c:32:00:<last byte of its IP>, so that a MAC in a capture
	// says who sent it.
	macPrefix = [5]byte{0x02, 0x48, 0x4c, 0x32, 0x00}
)

// checkPlan checks that the LAN has the addresses the package comment
// documents and the tests and benchmarks' reports use: the root namespace
// 198.18.0.1 (02:48:4c:32:00:01), nodeN 198.18.0.1N (02:48:4c:32:00:0b
// upwards), the client 198.18.0.100 (02:48:4c:32:00:64).
func checkPlan(lan *netlab.LAN, nodeNames []string) error {
	if got, want := lan.RootIP(), netip.MustParseAddr("198.18.0.1"); got != want {
		return fmt.Errorf("the root namespace has %s, want %s", got, want)
	}
	want := map[string]int{"client": clientHostNum}
	for i, name := range nodeNames {
		want[name] = 11 + i
	}
	for name, n := range want {
		h := lan.Host(name)
		if h == nil {
			return fmt.Errorf("no host %s on the LAN", name)
		}
		wantIP := netip.AddrFrom4([4]byte{198, 18, 0, byte(n)})
		wantMAC := fmt.Sprintf("02:48:4c:32:00:%02x", n)
		if h.IP != wantIP || h.MAC.String() != wantMAC {
			return fmt.Errorf("host %s has %s %s, want %s %s", name, h.IP, h.MAC, wantIP, wantMAC)
		}
	}
	return nil
}
