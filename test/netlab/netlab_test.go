package netlab

import (
	"net/netip"
	"testing"
)

func TestAddresses(t *testing.T) {
	l, err := New("nlt-", netip.MustParsePrefix("198.18.3.7/24"))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.RootIP().String(); got != "198.18.3.1" {
		t.Errorf("RootIP = %s", got)
	}
	if got := l.nth(100).String(); got != "198.18.3.100" {
		t.Errorf("nth(100) = %s", got)
	}
	if got := l.mac(11).String(); got != "02:48:4c:00:03:0b" {
		t.Errorf("default MAC of .11 = %s", got)
	}
	l.SetMACPrefix([5]byte{0x02, 0x48, 0x4c, 0x32, 0x00})
	if got := l.mac(100).String(); got != "02:48:4c:32:00:64" {
		t.Errorf("MAC of .100 with prefix 02:48:4c:32:00 = %s", got)
	}
	// Checked before anything is built.
	for _, n := range []int{0, 1, 255} {
		if _, err := l.Add("client", n); err == nil {
			t.Errorf("Add at .%d: no error", n)
		}
	}
	l.hosts["node1"] = &Host{Name: "node1", IP: l.nth(11)}
	if _, err := l.Add("node1", 12); err == nil {
		t.Error("Add of an existing name: no error")
	}
	if _, err := l.Add("other", 11); err == nil {
		t.Error("Add at a taken address: no error")
	}
}
