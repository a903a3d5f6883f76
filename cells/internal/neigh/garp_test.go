package neigh

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

// The packets themselves are checked on the wire by the end-to-end suites
// (test/l2: takeover announcements; test/multipool: pod announcements).
// Here: the refusals that happen before any socket is opened.
func TestSendGratuitousARPRefuses(t *testing.T) {
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	for _, tt := range []struct {
		name    string
		ifindex int
		ip      netip.Addr
		want    string
	}{
		// ARP has no room for an IPv6 address: no packet, a clear error.
		{"IPv6", 1, netip.MustParseAddr("fd00::1"), "not an IPv4 address"},
		{"IPv4-mapped IPv6", 1, netip.MustParseAddr("::ffff:198.18.0.1"), "not an IPv4 address"},
		// An ifindex no interface has (they count up from 1): the error
		// names it.
		{"unknown interface", 1 << 30, netip.MustParseAddr("198.18.0.1"), "interface 1073741824"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := SendGratuitousARP(tt.ifindex, tt.ip, mac)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("SendGratuitousARP(%d, %s): %v, want an error containing %q", tt.ifindex, tt.ip, err, tt.want)
			}
		})
	}
}
