package bpf

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"
)

// Two responders on one device, as the agent's and the control-plane
// VIP's run side by side (tcx, each with its own maps): each answers for
// its own address, whichever was attached last; what neither answers
// goes on to the kernel.
func TestTwoRespondersOnOneDevice(t *testing.T) {
	tbd := newTestbed(t)
	first, second := loadT(t, ModeTCX, ""), loadT(t, ModeTCX, "")
	tbd.attach(t, first)
	tbd.attach(t, second) // head of the chain: runs first
	other := netip.AddrFrom4([4]byte(tbd.vip.As4())).Next()
	otherMAC := net.HardwareAddr{0x02, 0xcc, 0, 0, 0, 0x03}
	if _, err := first.Upsert(tbd.vip, tbd.nodeIfindex, tbd.nodeMAC); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Upsert(other, tbd.nodeIfindex, otherMAC); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Responder{first, second} {
		if err := r.Heartbeat(time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	ac := tbd.arpClient(t)
	for ip, want := range map[netip.Addr]net.HardwareAddr{tbd.vip: tbd.nodeMAC, other: otherMAC} {
		mac, err := ac.resolve(ip, replyTimeout)
		if err != nil {
			t.Fatalf("resolving %v with two responders attached: %v", ip, err)
		}
		if !bytes.Equal(mac, want) {
			t.Fatalf("%v resolved to %v, want %v", ip, mac, want)
		}
	}
	// The kernel still answers for the node's own address: neither
	// program consumes what it does not answer.
	if _, err := ac.resolve(tbd.nodeIP, replyTimeout); err != nil {
		t.Fatalf("resolving the node's own address %v through both programs: %v", tbd.nodeIP, err)
	}
}
