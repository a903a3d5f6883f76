package arpwatch

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/mdlayher/ndp"
	"golang.org/x/sys/unix"
)

// ipv6Len is the fixed IPv6 header; protoICMPv6 its Next Header value for
// ICMPv6.
const (
	ipv6Len     = 40
	protoICMPv6 = 58
)

// NAFrame is one Neighbor Advertisement (RFC 4861), with the Ethernet and
// IPv6 header fields a host checks before it believes one.
type NAFrame struct {
	Seq      int       // position in the capture
	At       time.Time // when the kernel received it
	EthSrc   net.HardwareAddr
	EthDst   net.HardwareAddr
	Dst      netip.Addr // IPv6 destination: the soliciting host, or all-nodes when unsolicited
	HopLimit uint8      // 255 unless a router forwarded it; hosts drop anything else
	NA       *ndp.NeighborAdvertisement
}

// TLLA is the advertisement's Target Link-Layer Address option, the MAC it
// advertises, or nil.
func (f NAFrame) TLLA() net.HardwareAddr {
	for _, o := range f.NA.Options {
		if l, ok := o.(*ndp.LinkLayerAddress); ok && l.Direction == ndp.Target {
			return l.Addr
		}
	}
	return nil
}

func (f NAFrame) String() string {
	return fmt.Sprintf("#%d %s eth %s > %s, NA to %s: target %s at %s, S=%v O=%v",
		f.Seq, f.At.Format("15:04:05.000"), f.EthSrc, f.EthDst, f.Dst, f.NA.TargetAddress, f.TLLA(), f.NA.Solicited, f.NA.Override)
}

// ParseNA parses Ethernet + IPv6 (no extension headers) + ICMPv6 Neighbor
// Advertisement; any other frame is not an NAFrame. The ICMPv6 checksum is
// not verified here: tests that need it checked resolve with a real host
// stack (ndisc6), which drops bad ones in the kernel. Seq and At are left
// zero: they belong to the capture.
func ParseNA(b []byte) (NAFrame, bool) {
	if len(b) < ethLen+ipv6Len+24 || binary.BigEndian.Uint16(b[12:14]) != unix.ETH_P_IPV6 || b[ethLen+6] != protoICMPv6 {
		return NAFrame{}, false
	}
	ip := b[ethLen:]
	end := ipv6Len + int(binary.BigEndian.Uint16(ip[4:6]))
	if end > len(ip) {
		return NAFrame{}, false // truncated: the payload length says more than arrived
	}
	m, err := ndp.ParseMessage(ip[ipv6Len:end])
	if err != nil {
		return NAFrame{}, false
	}
	na, ok := m.(*ndp.NeighborAdvertisement)
	if !ok {
		return NAFrame{}, false
	}
	return NAFrame{
		EthDst:   net.HardwareAddr(slices.Clone(b[0:6])),
		EthSrc:   net.HardwareAddr(slices.Clone(b[6:12])),
		Dst:      netip.AddrFrom16([16]byte(ip[24:40])),
		HopLimit: ip[7],
		NA:       na,
	}, true
}

// NDPClient is a host on the LAN that resolves IPv6 addresses: it sends
// Neighbor Solicitations from a namespace's eth0 and captures every
// Neighbor Advertisement arriving there, for the whole run (the embedded
// Capture: Mark, Since, Close).
type NDPClient struct {
	*Capture[NAFrame]
	ip netip.Addr
}

// OpenNDPClient opens the capture inside network namespace netns; ip is
// the IPv6 address of its eth0, the source of the solicitations and the
// destination of the solicited advertisements.
func OpenNDPClient(netns string, ip netip.Addr) (*NDPClient, error) {
	c, err := OpenCapture(netns, unix.ETH_P_IPV6, func(b []byte, seq int, at time.Time) (NAFrame, bool) {
		f, ok := ParseNA(b)
		f.Seq, f.At = seq, at
		return f, ok
	})
	if err != nil {
		return nil, err
	}
	return &NDPClient{Capture: c, ip: ip}, nil
}

// Solicit sends a Neighbor Solicitation for target to its solicited-node
// multicast group, as a host resolving it does: a responder that only
// answers broadcasts, or a node that did not join the group behind a
// filtering NIC, would be missed by anything else.
func (c *NDPClient) Solicit(target netip.Addr) error {
	b, dst, err := solicitation(c.mac, c.ip, target)
	if err != nil {
		return err
	}
	return c.Send(b, dst)
}

// solicitation builds the Ethernet frame of a Neighbor Solicitation for
// target from (mac, ip), hop limit 255 as RFC 4861 requires, and returns it
// with its destination MAC (the group's, 33:33 + its low 32 bits).
func solicitation(mac net.HardwareAddr, ip, target netip.Addr) ([]byte, net.HardwareAddr, error) {
	group, err := ndp.SolicitedNodeMulticast(target)
	if err != nil {
		return nil, nil, err
	}
	g := group.As16()
	groupMAC := net.HardwareAddr{0x33, 0x33, g[12], g[13], g[14], g[15]}
	icmp, err := ndp.MarshalMessageChecksum(&ndp.NeighborSolicitation{
		TargetAddress: target,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: mac}},
	}, ip, group)
	if err != nil {
		return nil, nil, err
	}
	b := append(append([]byte{}, groupMAC...), mac...)
	b = binary.BigEndian.AppendUint16(b, unix.ETH_P_IPV6)
	b = binary.BigEndian.AppendUint32(b, 6<<28) // version 6, no traffic class, no flow label
	b = binary.BigEndian.AppendUint16(b, uint16(len(icmp)))
	b = append(b, protoICMPv6, 255)
	b = append(b, ip.AsSlice()...)
	b = append(b, group.AsSlice()...)
	b = append(b, icmp...)
	return b, groupMAC, nil
}

// Probe solicits target once and returns the MACs (Target Link-Layer
// Address options) of the solicited advertisements that came back to the
// client within ProbeWindow, one per answer, in capture order.
func (c *NDPClient) Probe(target netip.Addr) ([]string, error) {
	start := c.Mark()
	if err := c.Solicit(target); err != nil {
		return nil, fmt.Errorf("sending NS: %w", err)
	}
	time.Sleep(ProbeWindow)
	frames, err := c.Since(start)
	if err != nil {
		return nil, fmt.Errorf("capture stopped: %w", err)
	}
	return c.answers(target, frames), nil
}

// answers are the MACs of the advertisements in frames that answer the
// client's solicitation for target, as Probe counts them.
func (c *NDPClient) answers(target netip.Addr, frames []NAFrame) []string {
	var macs []string
	for _, f := range frames {
		if f.NA.TargetAddress == target && f.NA.Solicited && f.Dst == c.ip {
			macs = append(macs, f.TLLA().String())
		}
	}
	return macs
}
