package bfd

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// RFC 5881: control packets go to port 3784, from a port of 49152–65535,
// with TTL (hop limit) 255, and are accepted only with 255 (GTSM, RFC
// 5082): a packet from beyond the link cannot be forged into a session.
const (
	ControlPort = 3784
	minSrcPort  = 49152
	maxSrcPort  = 65535
	wireTTL     = 255
)

// Server runs single-hop sessions over UDP: one receiving socket per
// address family on port 3784, shared by the sessions, and one sending
// socket per session, from a port of its own. A session's goroutine owns
// its Session; packets reach it through a channel.
type Server struct {
	log      *slog.Logger
	onChange func(peer netip.Addr, st Status)
	port     int // ControlPort; tests use another

	mu        sync.Mutex
	byPeer    map[netip.Addr]*runner
	byDiscr   map[uint32]*runner
	listeners map[bool]*listener // by IPv6
	closed    bool
}

// NewServer returns a server with no sessions; onChange is called (from
// a session's goroutine) when a session starts and whenever its state,
// diagnostic or negotiated timers change.
func NewServer(log *slog.Logger, onChange func(peer netip.Addr, st Status)) *Server {
	return &Server{log: log, onChange: onChange, port: ControlPort, byPeer: map[netip.Addr]*runner{},
		byDiscr: map[uint32]*runner{}, listeners: map[bool]*listener{}}
}

// Add starts a session with peer, sending from local (invalid: the
// kernel picks the source address by route, as it does for the BGP
// session). A session with the same peer, local address and config is
// kept as it is; one with another is replaced.
func (s *Server) Add(peer, local netip.Addr, cfg Config) error {
	peer, local = peer.Unmap(), local.Unmap()
	cfg = cfg.withDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("bfd: server closed")
	}
	if r := s.byPeer[peer]; r != nil {
		if r.local == local && r.cfg == cfg {
			return nil
		}
		s.removeLocked(peer)
	}
	if err := s.listenLocked(peer.Is6()); err != nil {
		return err
	}
	conn, err := dialFrom(peer, local)
	if err != nil {
		return err
	}
	r := &runner{peer: peer, local: local, port: uint16(s.port), cfg: cfg, conn: conn, discr: s.newDiscrLocked(),
		rx: make(chan Packet, 16), stop: make(chan struct{}), done: make(chan struct{}), log: s.log.With("peer", peer)}
	s.byPeer[peer], s.byDiscr[r.discr] = r, r
	go r.run(NewSession(cfg, r.discr, time.Now()), func(st Status) { s.onChange(peer, st) })
	return nil
}

// Remove ends the session with peer, telling it AdminDown first, so that
// the peer does not take the removal for a failure of the path.
func (s *Server) Remove(peer netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(peer.Unmap())
}

func (s *Server) removeLocked(peer netip.Addr) {
	r := s.byPeer[peer]
	if r == nil {
		return
	}
	delete(s.byPeer, peer)
	delete(s.byDiscr, r.discr)
	close(r.stop)
	<-r.done
}

// Peers lists the peers with a session.
func (s *Server) Peers() []netip.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]netip.Addr, 0, len(s.byPeer))
	for p := range s.byPeer {
		out = append(out, p)
	}
	return out
}

// Close ends every session (AdminDown) and the receiving sockets.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for peer := range s.byPeer {
		s.removeLocked(peer)
	}
	for _, l := range s.listeners {
		l.conn.Close()
	}
}

// newDiscrLocked picks a random, non-zero, unused local discriminator.
func (s *Server) newDiscrLocked() uint32 {
	for {
		d := randUint32()
		if d != 0 && s.byDiscr[d] == nil {
			return d
		}
	}
}

// dispatch hands a received packet to its session: by Your Discriminator
// once the peer knows ours, by source address before (§6.3, RFC 5881
// §3). A packet whose source is not the session's peer is dropped.
func (s *Server) dispatch(src netip.Addr, p Packet) {
	s.mu.Lock()
	r := s.byPeer[src]
	if p.YourDiscriminator != 0 {
		r = s.byDiscr[p.YourDiscriminator]
	}
	s.mu.Unlock()
	if r == nil || r.peer != src {
		return
	}
	select {
	case r.rx <- p:
	default: // a peer flooding us; the session keeps up with what it can
	}
}

// dialFrom opens a session's sending socket: bound to local (if valid) and
// a free port of 49152–65535, TTL 255.
func dialFrom(peer, local netip.Addr) (*net.UDPConn, error) {
	network, any := "udp4", netip.IPv4Unspecified()
	if peer.Is6() {
		network, any = "udp6", netip.IPv6Unspecified()
	}
	if !local.IsValid() {
		local = any
	}
	var lastErr error
	for range 64 {
		port := minSrcPort + int(randUint32()%(maxSrcPort-minSrcPort+1))
		conn, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, uint16(port))))
		if err != nil {
			lastErr = err
			continue
		}
		if err := setSendTTL(conn, peer.Is6()); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}
	return nil, fmt.Errorf("bfd: no free source port for %s: %w", peer, lastErr)
}
