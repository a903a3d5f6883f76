package neigh

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

// As for ARP, the packets and memberships are checked on the wire by
// test/l2; here the refusals that happen before a packet is sent.
func TestNDPRefuses(t *testing.T) {
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	n := NewNDP()
	defer n.Close()
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"advertise IPv4", n.Advertise(1, netip.MustParseAddr("198.18.0.1"), mac), "not an IPv6 address"},
		{"advertise IPv4-mapped", n.Advertise(1, netip.MustParseAddr("::ffff:198.18.0.1"), mac), "not an IPv6 address"},
		{"advertise on an unknown interface", n.Advertise(1<<30, netip.MustParseAddr("fd00::1"), mac), "interface 1073741824"},
		{"want on an unknown interface", n.Want(1<<30, netip.MustParseAddr("fd00::1")), "interface 1073741824"},
		{"want IPv4", n.Want(1, netip.MustParseAddr("198.18.0.1")), "solicited-node group of 198.18.0.1"},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, tt.err, tt.want)
		}
	}
	// Unwanting what was never wanted is a no-op.
	if err := n.Unwant(1<<30, netip.MustParseAddr("fd00::1")); err != nil {
		t.Errorf("Unwant of an address never wanted: %v", err)
	}
}
