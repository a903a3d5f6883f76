package nodeipam

import (
	"net/netip"
	"testing"
)

func TestCIDRAddrs(t *testing.T) {
	c := newCIDRAddrs(netip.MustParsePrefix("198.18.100.0/29"))
	// .0 network, .1 gateway, .7 broadcast: 5 usable.
	var got []string
	for {
		a, ok := c.allocate()
		if !ok {
			break
		}
		got = append(got, a.String())
	}
	want := []string{"198.18.100.2", "198.18.100.3", "198.18.100.4", "198.18.100.5", "198.18.100.6"}
	if len(got) != len(want) {
		t.Fatalf("allocated %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("allocated %v, want %v", got, want)
		}
	}
	// Round-robin: a released address is not the next one handed out.
	c.release(netip.MustParseAddr("198.18.100.3"))
	c.release(netip.MustParseAddr("198.18.100.5"))
	if a, _ := c.allocate(); a.String() != "198.18.100.3" {
		t.Fatalf("after wrap-around got %s, want the first free one from the start, 198.18.100.3", a)
	}
	if a, _ := c.allocate(); a.String() != "198.18.100.5" {
		t.Fatalf("next got %s, want 198.18.100.5", a)
	}
	if c.claim(netip.MustParseAddr("198.18.100.1")) || c.claim(netip.MustParseAddr("198.18.101.9")) || c.claim(netip.MustParseAddr("198.18.100.2")) {
		t.Fatal("claimed a gateway, a foreign or a used address")
	}
}

func TestCIDRAddrsIPv6(t *testing.T) {
	c := newCIDRAddrs(netip.MustParsePrefix("fd00:18::/126"))
	// ::0 subnet-router anycast, ::1 gateway; IPv6 has no broadcast.
	a, _ := c.allocate()
	b, _ := c.allocate()
	if a.String() != "fd00:18::2" || b.String() != "fd00:18::3" {
		t.Fatalf("got %s %s", a, b)
	}
	if _, ok := c.allocate(); ok {
		t.Fatal("allocated from a full /126")
	}
}
