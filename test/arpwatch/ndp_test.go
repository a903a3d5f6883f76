package arpwatch

import (
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/mdlayher/ndp"
)

var (
	client6  = netip.MustParseAddr("fd00:18::64")
	other6   = netip.MustParseAddr("fd00:18::65")
	vip6     = netip.MustParseAddr("fd00:18:0:1::d0")
	vip6b    = netip.MustParseAddr("fd00:18:0:1::d1")
	allNodes = netip.IPv6LinkLocalAllNodes()
)

// rawNA builds Ethernet + IPv6 + ICMPv6 around a Neighbor Advertisement of
// target at mac, byte by byte.
func rawNA(t *testing.T, ethDst, ethSrc net.HardwareAddr, src, dst netip.Addr, hopLimit byte, target netip.Addr, mac net.HardwareAddr, solicited bool) []byte {
	t.Helper()
	icmp, err := ndp.MarshalMessageChecksum(&ndp.NeighborAdvertisement{
		Solicited:     solicited,
		Override:      true,
		TargetAddress: target,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}},
	}, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	return ipv6Frame(ethDst, ethSrc, src, dst, hopLimit, icmp)
}

func ipv6Frame(ethDst, ethSrc net.HardwareAddr, src, dst netip.Addr, hopLimit byte, payload []byte) []byte {
	b := append(slices.Clone(ethDst), ethSrc...)
	b = append(b, 0x86, 0xdd)
	b = append(b, 0x60, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(payload)))
	b = append(b, 58, hopLimit)
	b = append(b, src.AsSlice()...)
	b = append(b, dst.AsSlice()...)
	return append(b, payload...)
}

func TestParseNA(t *testing.T) {
	nodeLL := netip.MustParseAddr("fe80::48:4cff:fe32:b")
	solicited := rawNA(t, clientMAC, node1MAC, nodeLL, client6, 255, vip6, node1MAC, true)
	unsolicited := rawNA(t, mustMAC("33:33:00:00:00:01"), node2MAC, nodeLL, allNodes, 255, vip6, node2MAC, false)
	ns, err := ndp.MarshalMessageChecksum(&ndp.NeighborSolicitation{TargetAddress: vip6}, client6, client6)
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(b []byte, i int, v byte) []byte {
		b = slices.Clone(b)
		b[i] = v
		return b
	}
	tests := []struct {
		name      string
		b         []byte
		ok        bool
		dst       netip.Addr
		hopLimit  uint8
		tlla      string
		solicited bool
	}{
		{name: "solicited, to the client", b: solicited, ok: true, dst: client6, hopLimit: 255, tlla: node1MAC.String(), solicited: true},
		{name: "unsolicited, to all nodes", b: unsolicited, ok: true, dst: allNodes, hopLimit: 255, tlla: node2MAC.String()},
		{name: "forwarded: hop limit kept for the caller to check", b: mutate(solicited, 21, 64), ok: true, dst: client6, hopLimit: 64, tlla: node1MAC.String(), solicited: true},
		{name: "trailing padding", b: append(slices.Clone(solicited), 0, 0, 0, 0), ok: true, dst: client6, hopLimit: 255, tlla: node1MAC.String(), solicited: true},
		{name: "neighbor solicitation", b: ipv6Frame(BroadcastMAC, clientMAC, client6, client6, 255, ns)},
		{name: "not ICMPv6", b: mutate(solicited, 20, 17)},
		{name: "ARP EtherType", b: mutate(mutate(solicited, 12, 0x08), 13, 0x06)},
		{name: "short", b: solicited[:ethLen+ipv6Len+23]},
		{name: "payload length beyond the frame", b: mutate(solicited, 18, 0x10)},
		{name: "empty", b: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := ParseNA(tt.b)
			if ok != tt.ok {
				t.Fatalf("ParseNA ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if f.Dst != tt.dst || f.HopLimit != tt.hopLimit || f.TLLA().String() != tt.tlla ||
				f.NA.Solicited != tt.solicited || f.NA.TargetAddress != vip6 {
				t.Errorf("ParseNA: %s; want to %s, hop limit %d, target %s at %s, S=%v", f, tt.dst, tt.hopLimit, vip6, tt.tlla, tt.solicited)
			}
			if f.EthSrc.String() != net.HardwareAddr(tt.b[6:12]).String() || f.EthDst.String() != net.HardwareAddr(tt.b[0:6]).String() {
				t.Errorf("Ethernet addresses %s > %s, want those of the frame", f.EthSrc, f.EthDst)
			}
		})
	}
}

func TestTLLAMissing(t *testing.T) {
	f := NAFrame{NA: &ndp.NeighborAdvertisement{TargetAddress: vip6, Options: []ndp.Option{
		&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: node1MAC}, // a source option is not the answer
	}}}
	if got := f.TLLA(); got != nil {
		t.Errorf("TLLA() = %s, want nil", got)
	}
}

func TestSolicitation(t *testing.T) {
	b, dst, err := solicitation(clientMAC, client6, vip6)
	if err != nil {
		t.Fatal(err)
	}
	// ff02::1:ff00:d0, on the wire 33:33:ff:00:00:d0.
	if want := "33:33:ff:00:00:d0"; dst.String() != want {
		t.Errorf("destination MAC %s, want %s", dst, want)
	}
	if got := net.HardwareAddr(b[0:6]); got.String() != dst.String() {
		t.Errorf("Ethernet destination %s, want %s", got, dst)
	}
	if got := net.HardwareAddr(b[6:12]); got.String() != clientMAC.String() {
		t.Errorf("Ethernet source %s, want %s", got, clientMAC)
	}
	ip := b[ethLen:]
	if et := binary.BigEndian.Uint16(b[12:14]); et != 0x86dd {
		t.Errorf("EtherType %#x, want IPv6", et)
	}
	if ip[0]>>4 != 6 || ip[6] != protoICMPv6 || ip[7] != 255 {
		t.Errorf("IPv6 version %d, next header %d, hop limit %d; want 6, 58, 255", ip[0]>>4, ip[6], ip[7])
	}
	if src := netip.AddrFrom16([16]byte(ip[8:24])); src != client6 {
		t.Errorf("source %s, want %s", src, client6)
	}
	group, _ := ndp.SolicitedNodeMulticast(vip6)
	if d := netip.AddrFrom16([16]byte(ip[24:40])); d != group {
		t.Errorf("destination %s, want %s", d, group)
	}
	if n := int(binary.BigEndian.Uint16(ip[4:6])); n != len(ip)-ipv6Len {
		t.Errorf("payload length %d, want %d", n, len(ip)-ipv6Len)
	}
	m, err := ndp.ParseMessage(ip[ipv6Len:])
	if err != nil {
		t.Fatal(err)
	}
	ns, ok := m.(*ndp.NeighborSolicitation)
	if !ok {
		t.Fatalf("ICMPv6 message %T, want a Neighbor Solicitation", m)
	}
	if ns.TargetAddress != vip6 {
		t.Errorf("target %s, want %s", ns.TargetAddress, vip6)
	}
	if len(ns.Options) != 1 {
		t.Fatalf("options %v, want one Source Link-Layer Address", ns.Options)
	}
	if l, ok := ns.Options[0].(*ndp.LinkLayerAddress); !ok || l.Direction != ndp.Source || l.Addr.String() != clientMAC.String() {
		t.Errorf("option %v, want Source Link-Layer Address %s", ns.Options[0], clientMAC)
	}
}

func TestNDPAnswers(t *testing.T) {
	na := func(seq int, target netip.Addr, mac net.HardwareAddr, dst netip.Addr, solicited bool) NAFrame {
		return NAFrame{Seq: seq, Dst: dst, HopLimit: 255, NA: &ndp.NeighborAdvertisement{
			Solicited: solicited, Override: true, TargetAddress: target,
			Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}},
		}}
	}
	tests := []struct {
		name   string
		frames []NAFrame
		want   []string
	}{
		{name: "nothing"},
		{name: "one answer", frames: []NAFrame{na(0, vip6, node1MAC, client6, true)}, want: []string{node1MAC.String()}},
		{
			name:   "one per answer, in capture order, repeats kept",
			frames: []NAFrame{na(0, vip6, node2MAC, client6, true), na(1, vip6, node1MAC, client6, true), na(2, vip6, node2MAC, client6, true)},
			want:   []string{node2MAC.String(), node1MAC.String(), node2MAC.String()},
		},
		{
			name: "unsolicited, other targets, other hosts do not count",
			frames: []NAFrame{
				na(0, vip6, node1MAC, allNodes, false),
				na(1, vip6, node1MAC, client6, false),
				na(2, vip6b, node1MAC, client6, true),
				na(3, vip6, node1MAC, other6, true),
			},
		},
	}
	c := &NDPClient{Capture: &Capture[NAFrame]{mac: clientMAC}, ip: client6}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.answers(vip6, tt.frames); !slices.Equal(got, tt.want) {
				t.Errorf("answers = %v, want %v", got, tt.want)
			}
		})
	}
}
