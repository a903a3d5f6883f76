package neigh

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

// Probe asks the LAN whether another host uses the addresses, before this
// host starts answering for them: an ARP probe (RFC 5227: sender address
// 0.0.0.0, so that nobody's cache changes) for each IPv4 address, a
// duplicate address detection solicitation (RFC 4862: from ::, to the
// address's solicited-node group) for each IPv6 one, all sent at once on
// the interface; then it listens for wait. It returns, by address, the MAC
// of a host other than self that answered or spoke for it (an ARP packet
// with it as sender address, a Neighbor Advertisement for it).
//
// One round, not RFC 5227's three probes over seconds: the address is this
// node's to take (its Lease says so); the probe is there to notice a host
// that uses it anyway, not to arbitrate.
func Probe(ifindex int, self net.HardwareAddr, ips []netip.Addr, wait time.Duration) (map[netip.Addr]net.HardwareAddr, error) {
	ifi, err := net.InterfaceByIndex(ifindex)
	if err != nil {
		return nil, fmt.Errorf("interface %d: %w", ifindex, err)
	}
	var v4, v6 []netip.Addr
	for _, ip := range ips {
		if ip.Is4() || ip.Is4In6() {
			v4 = append(v4, ip.Unmap())
		} else {
			v6 = append(v6, ip)
		}
	}
	deadline := time.Now().Add(wait)
	var ls []listener
	defer func() {
		for _, l := range ls {
			_ = l.conn.Close()
		}
	}()
	if len(v4) > 0 {
		l, err := sendARPProbes(ifi, self, v4)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	if len(v6) > 0 {
		l, err := sendSolicitations(ifi, self, v6)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	return listen(ls, self, ips, deadline)
}

// listener is a socket the probes went out on, and how to read who speaks
// for an address in what comes back.
type listener struct {
	conn  *packet.Conn
	parse func([]byte) (netip.Addr, net.HardwareAddr, bool)
}

// sendARPProbes sends an ARP probe for each IPv4 address.
func sendARPProbes(ifi *net.Interface, self net.HardwareAddr, v4 []netip.Addr) (listener, error) {
	c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ARP, nil)
	if err != nil {
		return listener{}, fmt.Errorf("ARP socket on %s: %w", ifi.Name, err)
	}
	for _, ip := range v4 {
		if _, err := c.WriteTo(arpProbe(self, ip), &packet.Addr{HardwareAddr: ethernet.Broadcast}); err != nil {
			_ = c.Close()
			return listener{}, fmt.Errorf("ARP probe for %s on %s: %w", ip, ifi.Name, err)
		}
	}
	return listener{c, parseARPSender}, nil
}

// sendSolicitations sends a duplicate address detection solicitation for
// each IPv6 address.
func sendSolicitations(ifi *net.Interface, self net.HardwareAddr, v6 []netip.Addr) (listener, error) {
	c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_IPV6, nil)
	if err != nil {
		return listener{}, fmt.Errorf("IPv6 socket on %s: %w", ifi.Name, err)
	}
	for _, ip := range v6 {
		frame, dst, err := dadSolicitation(self, ip)
		if err == nil {
			_, err = c.WriteTo(frame, &packet.Addr{HardwareAddr: dst})
			if err != nil {
				err = fmt.Errorf("duplicate address detection for %s on %s: %w", ip, ifi.Name, err)
			}
		}
		if err != nil {
			_ = c.Close()
			return listener{}, err
		}
	}
	return listener{c, parseAdvertisement}, nil
}

// listen reads every listener until deadline and returns, by address, the
// MAC of a host other than self that spoke for one of ips.
func listen(ls []listener, self net.HardwareAddr, ips []netip.Addr, deadline time.Time) (map[netip.Addr]net.HardwareAddr, error) {
	type hit struct {
		ip  netip.Addr
		mac net.HardwareAddr
	}
	errs := make(chan error, len(ls))
	hits := make(chan hit, 64)
	for _, l := range ls {
		go func() {
			buf := make([]byte, 1500)
			_ = l.conn.SetReadDeadline(deadline)
			for {
				n, _, err := l.conn.ReadFrom(buf)
				if err != nil {
					if errors.Is(err, os.ErrDeadlineExceeded) {
						err = nil
					}
					errs <- err
					return
				}
				if ip, mac, ok := l.parse(buf[:n]); ok && !slices.Equal(mac, self) && slices.Contains(ips, ip) {
					hits <- hit{ip, mac}
				}
			}
		}()
	}
	found := map[netip.Addr]net.HardwareAddr{}
	var firstErr error
	for pending := len(ls); pending > 0; {
		select {
		case h := <-hits:
			found[h.ip] = h.mac
		case err := <-errs:
			pending--
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	for len(hits) > 0 {
		h := <-hits
		found[h.ip] = h.mac
	}
	return found, firstErr
}

// arpProbe is an ARP probe for ip: a broadcast request from self, sender
// address 0.0.0.0.
func arpProbe(self net.HardwareAddr, ip netip.Addr) []byte {
	p, _ := arp.NewPacket(arp.OperationRequest, self, netip.IPv4Unspecified(), ethernet.Broadcast, ip)
	p.TargetHardwareAddr = make(net.HardwareAddr, 6)
	payload, _ := p.MarshalBinary()
	f := ethernet.Frame{Destination: ethernet.Broadcast, Source: self, EtherType: ethernet.EtherTypeARP, Payload: payload}
	b, _ := f.MarshalBinary()
	return b
}

// parseARPSender returns the sender of an ARP packet (request or reply):
// whoever uses that address.
func parseARPSender(b []byte) (netip.Addr, net.HardwareAddr, bool) {
	var f ethernet.Frame
	if err := f.UnmarshalBinary(b); err != nil || f.EtherType != ethernet.EtherTypeARP {
		return netip.Addr{}, nil, false
	}
	var p arp.Packet
	if err := p.UnmarshalBinary(f.Payload); err != nil || !p.SenderIP.IsValid() || p.SenderIP.IsUnspecified() {
		return netip.Addr{}, nil, false
	}
	return p.SenderIP, p.SenderHardwareAddr, true
}

// dadSolicitation is a duplicate address detection Neighbor Solicitation
// for ip: from ::, to its solicited-node group, no source link-layer
// address (RFC 4861 forbids it from ::). It returns the frame and its
// Ethernet destination.
func dadSolicitation(self net.HardwareAddr, ip netip.Addr) ([]byte, net.HardwareAddr, error) {
	group, err := ndp.SolicitedNodeMulticast(ip)
	if err != nil {
		return nil, nil, err
	}
	icmp, err := ndp.MarshalMessageChecksum(&ndp.NeighborSolicitation{TargetAddress: ip}, netip.IPv6Unspecified(), group)
	if err != nil {
		return nil, nil, err
	}
	g := group.As16()
	dst := net.HardwareAddr{0x33, 0x33, g[12], g[13], g[14], g[15]}
	b := append(append([]byte{}, dst...), self...)
	b = binary.BigEndian.AppendUint16(b, unix.ETH_P_IPV6)
	b = binary.BigEndian.AppendUint32(b, 6<<28)
	b = binary.BigEndian.AppendUint16(b, uint16(len(icmp)))
	b = append(b, 58, ndp.HopLimit)
	b = append(b, netip.IPv6Unspecified().AsSlice()...)
	b = append(b, group.AsSlice()...)
	return append(b, icmp...), dst, nil
}

// parseAdvertisement returns the target of a Neighbor Advertisement and the
// MAC it was sent from.
func parseAdvertisement(b []byte) (netip.Addr, net.HardwareAddr, bool) {
	const ethLen, ipLen = 14, 40
	if len(b) < ethLen+ipLen+24 || binary.BigEndian.Uint16(b[12:14]) != unix.ETH_P_IPV6 || b[ethLen+6] != 58 || b[ethLen+ipLen] != 136 {
		return netip.Addr{}, nil, false
	}
	end := min(len(b), ethLen+ipLen+int(binary.BigEndian.Uint16(b[ethLen+4:ethLen+6])))
	m, err := ndp.ParseMessage(b[ethLen+ipLen : end])
	if err != nil {
		return netip.Addr{}, nil, false
	}
	na, ok := m.(*ndp.NeighborAdvertisement)
	if !ok {
		return netip.Addr{}, nil, false
	}
	return na.TargetAddress, slices.Clone(net.HardwareAddr(b[6:12])), true
}
