package bfd

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// states records the states a server reports, by peer.
type states struct {
	mu  sync.Mutex
	got map[netip.Addr][]State
	ch  chan struct{}
}

func newStates() *states { return &states{got: map[netip.Addr][]State{}, ch: make(chan struct{}, 100)} }

func (s *states) report(peer netip.Addr, st Status) {
	s.mu.Lock()
	s.got[peer] = append(s.got[peer], st.State)
	s.mu.Unlock()
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

func (s *states) last(peer netip.Addr) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.got[peer]
	if len(l) == 0 {
		return 255
	}
	return l[len(l)-1]
}

func (s *states) waitFor(t *testing.T, peer netip.Addr, want State) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for s.last(peer) != want {
		select {
		case <-s.ch:
		case <-deadline:
			t.Fatalf("%s: states %v, never %s", peer, s.got[peer], want)
		}
	}
}

func testServer(t *testing.T, st *states) *Server {
	srv := NewServer(slog.New(slog.DiscardHandler), st.report)
	srv.port = 0
	t.Cleanup(srv.Close)
	return srv
}

// A session with the loopback address talks to itself through the real
// sockets: its own Down packet makes it Init, its Init packet Up.
func TestServerLoopback(t *testing.T) {
	st := newStates()
	srv := testServer(t, st)
	lo := netip.MustParseAddr("127.0.0.1")
	if err := srv.Add(lo, netip.Addr{}, fast); err != nil {
		t.Fatal(err)
	}
	st.waitFor(t, lo, StateUp)
	srv.Remove(lo)
	if len(srv.Peers()) != 0 {
		t.Fatalf("peers after Remove: %v", srv.Peers())
	}
}

// Packets that arrive with a TTL below 255 come from beyond the link:
// dropped (RFC 5881 §5). The same packet with 255 is taken.
func TestServerChecksTTL(t *testing.T) {
	st := newStates()
	srv := testServer(t, st)
	peer := netip.MustParseAddr("127.0.0.2")
	if err := srv.Add(peer, netip.Addr{}, fast); err != nil {
		t.Fatal(err)
	}
	st.waitFor(t, peer, StateDown)
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: srv.port}
	down := Packet{State: StateDown, DetectMult: 3, MyDiscriminator: 77, DesiredMinTx: 1e6, RequiredMinRx: 1e6}
	if err := ipv4.NewConn(conn).SetTTL(254); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := conn.WriteTo(down.Append(nil), to); err != nil {
			t.Fatal(err)
		}
	}
	// The session would be Init at once had one been taken; then the
	// same packet at TTL 255 is.
	time.Sleep(200 * time.Millisecond)
	if got := st.last(peer); got != StateDown {
		t.Fatalf("a TTL 254 packet moved the session to %s", got)
	}
	if err := ipv4.NewConn(conn).SetTTL(255); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.WriteTo(down.Append(nil), to); err != nil {
		t.Fatal(err)
	}
	st.waitFor(t, peer, StateInit)
}
