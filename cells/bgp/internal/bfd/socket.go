package bfd

import (
	"fmt"
	"net"
	"strconv"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// listener is the receiving socket of one address family.
type listener struct {
	conn net.PacketConn
}

// listenLocked opens the receiving socket of the family on first use and
// starts its reader.
func (s *Server) listenLocked(v6 bool) error {
	if s.listeners[v6] != nil {
		return nil
	}
	network, addr := "udp4", fmt.Sprintf("0.0.0.0:%d", s.port)
	if v6 {
		network, addr = "udp6", fmt.Sprintf("[::]:%d", s.port)
	}
	conn, err := net.ListenPacket(network, addr)
	if err != nil {
		return fmt.Errorf("bfd: listening on %s %s: %w", network, addr, err)
	}
	if s.port == 0 { // tests: an ephemeral port, then the same for the other family
		s.port = conn.LocalAddr().(*net.UDPAddr).Port
	}
	l := &listener{conn: conn}
	if v6 {
		pc := ipv6.NewPacketConn(conn)
		if err := pc.SetControlMessage(ipv6.FlagHopLimit|ipv6.FlagInterface, true); err != nil {
			conn.Close()
			return fmt.Errorf("bfd: asking for the hop limit and interface of received packets: %w", err)
		}
		go s.read6(pc)
	} else {
		pc := ipv4.NewPacketConn(conn)
		if err := pc.SetControlMessage(ipv4.FlagTTL, true); err != nil {
			conn.Close()
			return fmt.Errorf("bfd: asking for the TTL of received packets: %w", err)
		}
		go s.read4(pc)
	}
	s.listeners[v6] = l
	return nil
}

func (s *Server) read4(pc *ipv4.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, cm, src, err := pc.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		if cm == nil || cm.TTL != wireTTL {
			continue
		}
		s.received(src, buf[:n])
	}
}

func (s *Server) read6(pc *ipv6.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, cm, src, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if cm == nil || cm.HopLimit != wireTTL {
			continue
		}
		s.received(linkLocalZone(src, cm.IfIndex), buf[:n])
	}
}

// linkLocalZone gives a link-local source the index of the interface the
// packet came in on as zone, as the sessions' peers have it (Go would
// name the interface instead, from a cache it refreshes once a minute).
func linkLocalZone(src net.Addr, ifIndex int) net.Addr {
	udp, ok := src.(*net.UDPAddr)
	if !ok || ifIndex == 0 || !udp.IP.IsLinkLocalUnicast() {
		return src
	}
	zoned := *udp
	zoned.Zone = strconv.Itoa(ifIndex)
	return &zoned
}

func (s *Server) received(src net.Addr, b []byte) {
	udp, ok := src.(*net.UDPAddr)
	if !ok {
		return
	}
	p, err := Decode(b)
	if err != nil {
		return
	}
	s.dispatch(udp.AddrPort().Addr().Unmap(), p)
}

// setSendTTL makes a sending socket's packets leave with TTL (hop limit)
// 255.
func setSendTTL(conn *net.UDPConn, v6 bool) error {
	if v6 {
		if err := ipv6.NewConn(conn).SetHopLimit(wireTTL); err != nil {
			return fmt.Errorf("bfd: setting hop limit 255: %w", err)
		}
		return nil
	}
	if err := ipv4.NewConn(conn).SetTTL(wireTTL); err != nil {
		return fmt.Errorf("bfd: setting TTL 255: %w", err)
	}
	return nil
}
