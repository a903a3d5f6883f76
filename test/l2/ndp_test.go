package l2

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// naFrame is one Neighbor Advertisement seen on the client's eth0.
type naFrame struct {
	seq      int
	at       time.Time
	ethSrc   net.HardwareAddr
	ethDst   net.HardwareAddr
	dst      netip.Addr
	hopLimit uint8
	na       *ndp.NeighborAdvertisement
}

// tlla is the advertisement's Target Link-Layer Address option, or nil.
func (f naFrame) tlla() net.HardwareAddr {
	for _, o := range f.na.Options {
		if l, ok := o.(*ndp.LinkLayerAddress); ok && l.Direction == ndp.Target {
			return l.Addr
		}
	}
	return nil
}

func (f naFrame) String() string {
	return fmt.Sprintf("#%d %s eth %s > %s, NA to %s: target %s at %s, S=%v O=%v",
		f.seq, f.at.Format("15:04:05.000"), f.ethSrc, f.ethDst, f.dst, f.na.TargetAddress, f.tlla(), f.na.Solicited, f.na.Override)
}

// ndpClient sends Neighbor Solicitations from the client namespace's eth0
// and captures every Neighbor Advertisement arriving there.
type ndpClient struct {
	*capture[naFrame]
	ip netip.Addr
}

func openNDPClient(ns string, ip netip.Addr) (*ndpClient, error) {
	c, err := openCapture(ns, unix.ETH_P_IPV6, func(b []byte, seq int, at time.Time) (naFrame, bool) {
		f, ok := parseNA(b)
		f.seq, f.at = seq, at
		return f, ok
	})
	if err != nil {
		return nil, err
	}
	return &ndpClient{capture: c, ip: ip}, nil
}

// parseNA parses Ethernet + IPv6 (no extension headers) + ICMPv6 Neighbor
// Advertisement. The checksum is not verified here: ndisc6 does that, in
// the kernel, for the answers TestIPv6VIP checks with it.
func parseNA(b []byte) (naFrame, bool) {
	const ethLen, ipLen = 14, 40
	if len(b) < ethLen+ipLen+24 || binary.BigEndian.Uint16(b[12:14]) != unix.ETH_P_IPV6 || b[ethLen+6] != 58 {
		return naFrame{}, false
	}
	ip := b[ethLen:]
	m, err := ndp.ParseMessage(ip[ipLen : ipLen+int(binary.BigEndian.Uint16(ip[4:6]))])
	if err != nil {
		return naFrame{}, false
	}
	na, ok := m.(*ndp.NeighborAdvertisement)
	if !ok {
		return naFrame{}, false
	}
	return naFrame{
		ethDst:   net.HardwareAddr(slices.Clone(b[0:6])),
		ethSrc:   net.HardwareAddr(slices.Clone(b[6:12])),
		dst:      netip.AddrFrom16([16]byte(ip[24:40])),
		hopLimit: ip[7],
		na:       na,
	}, true
}

// solicit sends a Neighbor Solicitation for target to its solicited-node
// multicast group, as a host resolving it does.
func (c *ndpClient) solicit(target netip.Addr) error {
	group, err := ndp.SolicitedNodeMulticast(target)
	if err != nil {
		return err
	}
	g := group.As16()
	groupMAC := net.HardwareAddr{0x33, 0x33, g[12], g[13], g[14], g[15]}
	icmp, err := ndp.MarshalMessageChecksum(&ndp.NeighborSolicitation{
		TargetAddress: target,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: c.mac}},
	}, c.ip, group)
	if err != nil {
		return err
	}
	b := append(append([]byte{}, groupMAC...), c.mac...)
	b = binary.BigEndian.AppendUint16(b, unix.ETH_P_IPV6)
	b = binary.BigEndian.AppendUint32(b, 6<<28)
	b = binary.BigEndian.AppendUint16(b, uint16(len(icmp)))
	b = append(b, 58, 255)
	b = append(b, c.ip.AsSlice()...)
	b = append(b, group.AsSlice()...)
	b = append(b, icmp...)
	_, err = c.conn.WriteTo(b, &packet.Addr{HardwareAddr: groupMAC})
	return err
}

// probe solicits target once and returns the MACs (Target Link-Layer
// Address options) of the solicited advertisements that came back to the
// client within probeWindow, one per answer.
func (c *ndpClient) probe(target netip.Addr) ([]string, error) {
	start := c.mark()
	if err := c.solicit(target); err != nil {
		return nil, fmt.Errorf("sending NS: %w", err)
	}
	time.Sleep(probeWindow)
	frames, err := c.since(start)
	if err != nil {
		return nil, fmt.Errorf("capture stopped: %w", err)
	}
	var macs []string
	for _, f := range frames {
		if f.na.TargetAddress == target && f.na.Solicited && f.dst == c.ip {
			macs = append(macs, f.tlla().String())
		}
	}
	return macs, nil
}

// expectNDPAnsweredOnlyBy waits until a solicitation for vip is answered by
// n alone, then checks that the next ones are too: one answer each, with
// n's MAC.
func expectNDPAnsweredOnlyBy(t testing.TB, vip netip.Addr, n *node) {
	t.Helper()
	want := []string{n.host.MAC.String()}
	probe := func() []string {
		t.Helper()
		macs, err := client6.probe(vip)
		if err != nil {
			t.Fatal(err)
		}
		return macs
	}
	waitFor(t, func() (bool, string) {
		got := probe()
		return slices.Equal(got, want), fmt.Sprintf("want one advertisement from %s; got %v", n, got)
	})
	for i := range confirmations {
		if got := probe(); !slices.Equal(got, want) {
			t.Fatalf("solicitation %d after %s first answered alone: got advertisements from %v, want one from %s", i+1, n.Name, got, n)
		}
	}
}

// ndisc6 resolves vip from the client namespace with ndisc6 (which checks
// the advertisement as a host does: hop limit 255, the kernel's ICMPv6
// checksum check, the target) and returns the MAC it printed.
func ndisc6(t testing.TB, vip netip.Addr) string {
	t.Helper()
	if _, err := exec.LookPath("ndisc6"); err != nil {
		t.Fatalf("ndisc6 is missing (Debian package ndisc6, installed by install/dev/ensure-tools.sh)")
	}
	out, err := exec.Command("ip", "netns", "exec", clientHost.Netns, "ndisc6", "-q", "-1", "-r", "3", "-w", "500", vip.String(), devName).CombinedOutput()
	if err != nil {
		t.Fatalf("ndisc6 %s from %s: %v\n%s", vip, clientHost.Netns, err, out)
	}
	return strings.ToLower(strings.TrimSpace(string(out)))
}

// inGroup reports whether the namespace's eth0 is a member of vip's
// solicited-node multicast group (/proc/net/igmp6 of the namespace).
func inGroup(t testing.TB, ns string, vip netip.Addr) bool {
	t.Helper()
	group, err := ndp.SolicitedNodeMulticast(vip)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/net/igmp6").CombinedOutput()
	if err != nil {
		t.Fatalf("reading /proc/net/igmp6 in %s: %v\n%s", ns, err, out)
	}
	hex := fmt.Sprintf("%x", group.AsSlice())
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[1] == devName && f[2] == hex {
			return true
		}
	}
	return false
}

// TestIPv6VIP: an IPv6 VIP is answered by its owner alone, with an
// advertisement ndisc6 accepts; the owner (and only it) joined the VIP's
// solicited-node group, which is what gets multicast solicitations past a
// real NIC's filter and an MLD-snooping switch. After kill -9 of the owner
// another node answers and announces itself with an unsolicited
// advertisement; deleting the Service withdraws the VIP and leaves the
// group.
func TestIPv6VIP(t *testing.T) {
	s := newScenario(t)
	s.createPolicy("all", nil)
	s.createServiceWith("web6", singleStack(corev1.IPv6Protocol))
	vip := s.waitVIPIn("web6", poolCIDR6)

	owner := s.waitOwner("web6", vip)
	expectNDPAnsweredOnlyBy(t, vip, owner)
	if got := ndisc6(t, vip); got != owner.host.MAC.String() {
		t.Fatalf("ndisc6 %s: %q, want %s", vip, got, owner.host.MAC)
	}
	for _, n := range nodes {
		if got := inGroup(t, n.host.Netns, vip); got != (n == owner) {
			t.Errorf("%s in the solicited-node group of %s: %v, want %v", n.Name, vip, got, n == owner)
		}
	}
	expectDbgResponder(t, vip, owner)

	start := client6.mark()
	t.Logf("kill -9 the agent of %s", owner.Name)
	if err := owner.Kill9(); err != nil {
		t.Fatal(err)
	}
	next := s.waitOwner("web6", vip, owner)
	expectNDPAnsweredOnlyBy(t, vip, next)
	waitFor(t, func() (bool, string) {
		frames, err := client6.since(start)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, f := range frames {
			if f.na.TargetAddress == vip && !f.na.Solicited && f.na.Override && f.dst == netip.IPv6LinkLocalAllNodes() &&
				f.hopLimit == 255 && f.tlla().String() == next.host.MAC.String() {
				return true, ""
			}
			seen = append(seen, f.String())
		}
		return false, fmt.Sprintf("no unsolicited advertisement of %s from %s; advertisements seen: %v", vip, next, seen)
	})
	if !inGroup(t, next.host.Netns, vip) {
		t.Errorf("%s answers for %s but did not join its solicited-node group", next.Name, vip)
	}
	ensureAgents(t)
	expectDbgResponder(t, vip, next)

	s.deleteService("web6")
	waitWithdrawn(t, next, vip)
	if inGroup(t, next.host.Netns, vip) {
		t.Errorf("%s withdrew %s but stays in its solicited-node group", next.Name, vip)
	}
	if macs, err := client6.probe(vip); err != nil || len(macs) != 0 {
		t.Fatalf("after the Service is gone, solicitations for %s got answers from %v (%v)", vip, macs, err)
	}
}

// expectDbgResponder checks `herald-dbg bpf responder` on the nodes whose
// pins the host sees (not node3's, pinned in its agent's own mount
// namespace; in a pod, herald-dbg runs in the agent's container, which
// sees them): the owner lists vip as
// answering neighbor solicitations, the others do not list it. Of two
// successive owners, at least one is checked.
func expectDbgResponder(t *testing.T, vip netip.Addr, owner *node) {
	t.Helper()
	for _, n := range nodes {
		if n.BPFRoot == "" {
			continue
		}
		out, err := n.Dbg("bpf", "responder")
		if err != nil {
			t.Fatalf("herald-dbg bpf responder on %s: %v", n.Name, err)
		}
		var line string
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == vip.String() {
				line = l
			}
		}
		switch {
		case n == owner && !strings.Contains(line, "neighbor solicitations"):
			t.Errorf("herald-dbg bpf responder on %s, the owner: no entry for %s answering neighbor solicitations:\n%s", n.Name, vip, out)
		case n != owner && line != "":
			t.Errorf("herald-dbg bpf responder on %s lists %s, owned by %s:\n%s", n.Name, vip, owner.Name, out)
		}
	}
}
