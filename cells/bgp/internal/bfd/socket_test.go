package bfd

import (
	"net"
	"testing"
)

// A link-local source gets the receiving interface's index as zone, the
// form the sessions' peers have; other sources stay as they are.
func TestLinkLocalZone(t *testing.T) {
	for _, c := range []struct {
		src     *net.UDPAddr
		ifIndex int
		want    string
	}{
		{&net.UDPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth1", Port: 49152}, 7, "[fe80::1%7]:49152"},
		{&net.UDPAddr{IP: net.ParseIP("fe80::1"), Port: 49152}, 7, "[fe80::1%7]:49152"},
		{&net.UDPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth1", Port: 49152}, 0, "[fe80::1%eth1]:49152"},
		{&net.UDPAddr{IP: net.ParseIP("fd00:18::1"), Port: 49152}, 7, "[fd00:18::1]:49152"},
	} {
		if got := linkLocalZone(c.src, c.ifIndex).String(); got != c.want {
			t.Errorf("linkLocalZone(%s, %d) = %s, want %s", c.src, c.ifIndex, got, c.want)
		}
	}
}
