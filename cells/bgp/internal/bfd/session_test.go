package bfd

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestTransitions is the table of §6.8.6: local state × remote state.
func TestTransitions(t *testing.T) {
	cases := []struct {
		local, remote State
		want          State
		diag          Diag
	}{
		{StateDown, StateDown, StateInit, DiagNone},
		{StateDown, StateInit, StateUp, DiagNone},
		{StateDown, StateUp, StateDown, DiagNone},
		{StateDown, StateAdminDown, StateDown, DiagNone},
		{StateInit, StateDown, StateInit, DiagNone},
		{StateInit, StateInit, StateUp, DiagNone},
		{StateInit, StateUp, StateUp, DiagNone},
		{StateInit, StateAdminDown, StateDown, DiagNeighborDown},
		{StateUp, StateDown, StateDown, DiagNeighborDown},
		{StateUp, StateInit, StateUp, DiagNone},
		{StateUp, StateUp, StateUp, DiagNone},
		{StateUp, StateAdminDown, StateDown, DiagNeighborDown},
	}
	for _, c := range cases {
		t.Run(c.local.String()+"+"+c.remote.String(), func(t *testing.T) {
			s := NewSession(Config{}, 1, t0)
			s.state = c.local
			s.Receive(t0, Packet{State: c.remote, DetectMult: 3, MyDiscriminator: 9, YourDiscriminator: 1, DesiredMinTx: 1e6, RequiredMinRx: 1e6})
			if s.State() != c.want || s.localDiag != c.diag {
				t.Fatalf("%s, diag %q; want %s, diag %q", s.State(), s.localDiag, c.want, c.diag)
			}
		})
	}
}

func TestIgnoresPackets(t *testing.T) {
	s := NewSession(Config{}, 1, t0)
	if send, _ := s.Receive(t0, Packet{State: StateDown, DetectMult: 3, MyDiscriminator: 9, YourDiscriminator: 2}); send || s.State() != StateDown {
		t.Fatalf("a packet for another discriminator changed the session: %s", s.State())
	}
	s.AdminDown(t0)
	s.Receive(t0, Packet{State: StateInit, DetectMult: 3, MyDiscriminator: 9, YourDiscriminator: 1})
	if s.State() != StateAdminDown {
		t.Fatalf("admin down session moved to %s", s.State())
	}
	if p := s.Packet(false); p.State != StateAdminDown || p.Diag != DiagAdminDown {
		t.Fatalf("admin down sends %+v", p)
	}
}

// pair is two sessions on a link that delivers at once (or not at all),
// run on a simulated clock.
type pair struct {
	t    *testing.T
	now  time.Time
	a, b *Session
	cut  bool // a's packets and b's lost
	// sentA, sentB count the packets each sent.
	sentA, sentB int
	// log of a's states, one per change.
	statesA []State
}

func newPair(t *testing.T, ca, cb Config) *pair {
	p := &pair{t: t, now: t0, a: NewSession(ca, 100, t0), b: NewSession(cb, 200, t0)}
	p.a.jitter = func() float64 { return 0.5 }
	p.b.jitter = func() float64 { return 0.5 }
	return p
}

func (p *pair) deliver(from, to *Session, final bool) {
	if from == p.a {
		p.sentA++
	} else {
		p.sentB++
	}
	if p.cut {
		return
	}
	pkt := from.Packet(final)
	// Through the wire format, as the transport does.
	dec, err := Decode(pkt.Append(nil))
	if err != nil {
		p.t.Fatalf("sent an invalid packet %+v: %v", pkt, err)
	}
	before := p.a.State()
	send, fin := to.Receive(p.now, dec)
	p.noteA(before)
	if send {
		p.deliver(to, from, fin)
	}
}

func (p *pair) noteA(before State) {
	if st := p.a.State(); st != before {
		p.statesA = append(p.statesA, st)
	}
}

// run advances the clock to until, event by event.
func (p *pair) run(d time.Duration) {
	until := p.now.Add(d)
	for {
		next := until
		for _, s := range []*Session{p.a, p.b} {
			if e := s.NextEvent(); !e.IsZero() && e.Before(next) {
				next = e
			}
		}
		p.now = next
		for _, s := range []*Session{p.a, p.b} {
			other := p.b
			if s == p.b {
				other = p.a
			}
			before := p.a.State()
			if s.Advance(p.now) {
				p.noteA(before)
				p.deliver(s, other, false)
			}
			p.noteA(before)
		}
		if !p.now.Before(until) {
			return
		}
	}
}

var fast = Config{DesiredMinTx: 100 * time.Millisecond, RequiredMinRx: 100 * time.Millisecond, DetectMult: 3}

func TestComesUpAndNegotiates(t *testing.T) {
	p := newPair(t, fast, Config{DesiredMinTx: 50 * time.Millisecond, RequiredMinRx: 200 * time.Millisecond, DetectMult: 5})
	p.run(3 * time.Second)
	if p.a.State() != StateUp || p.b.State() != StateUp {
		t.Fatalf("states %s/%s, want up/up", p.a.State(), p.b.State())
	}
	st := p.a.Status()
	// a sends no faster than b accepts (200 ms); b may stay silent for 5
	// intervals of max(a's 100 ms rx, b's 50 ms tx).
	if st.TxInterval != 200*time.Millisecond || st.DetectTime != 500*time.Millisecond || st.PollInFlight {
		t.Fatalf("a: %+v", st)
	}
	if got := p.b.Status(); got.TxInterval != 100*time.Millisecond || got.DetectTime != 3*200*time.Millisecond {
		t.Fatalf("b: %+v", got)
	}
	// Up at the fast rate: about 1 s / (0.875 × 200 ms) packets from a.
	sent := p.sentA
	p.run(time.Second)
	if n := p.sentA - sent; n < 5 || n > 6 {
		t.Fatalf("a sent %d packets in a second at 200 ms × 87.5%%", n)
	}
}

func TestSlowWhileNotUp(t *testing.T) {
	p := newPair(t, fast, fast)
	p.cut = true
	p.run(10 * time.Second)
	// One at once, then one every 875 ms (1 s less the fixed jitter).
	if p.sentA < 11 || p.sentA > 12 || p.a.State() != StateDown {
		t.Fatalf("a sent %d packets in 10 s while down (state %s)", p.sentA, p.a.State())
	}
}

func TestDetectionTimeExpires(t *testing.T) {
	p := newPair(t, fast, fast)
	p.run(3 * time.Second)
	if p.a.State() != StateUp {
		t.Fatalf("not up: %s", p.a.State())
	}
	p.statesA = nil
	p.cut = true
	cutAt := p.now
	// The last packet came at most one interval less jitter (87.5 ms)
	// before the cut.
	p.run(200 * time.Millisecond)
	if p.a.State() != StateUp {
		t.Fatalf("down before the detection time: %s", p.a.State())
	}
	p.run(100 * time.Millisecond)
	st := p.a.Status()
	if st.State != StateDown || st.LocalDiag != DiagControlDetectExpired || st.RemoteDiscr != 0 {
		t.Fatalf("after the detection time: %+v", st)
	}
	if d := st.Since.Sub(cutAt); d > 300*time.Millisecond {
		t.Fatalf("went down %s after the cut; detect time is 300 ms", d)
	}
	// The path heals: up again through Init.
	p.cut = false
	p.run(5 * time.Second)
	if p.a.State() != StateUp || len(p.statesA) < 2 {
		t.Fatalf("states after healing %v", p.statesA)
	}
}

func TestRemoteSignalsDown(t *testing.T) {
	p := newPair(t, fast, fast)
	p.run(3 * time.Second)
	// b restarts: a new session, new discriminator, in Down.
	p.b = NewSession(fast, 201, p.now)
	p.b.jitter = func() float64 { return 0.5 }
	p.statesA = nil
	p.run(3 * time.Second)
	if len(p.statesA) == 0 || p.statesA[0] != StateDown || p.a.localDiag != DiagNeighborDown {
		t.Fatalf("a's states after b restarted: %v (diag %s)", p.statesA, p.a.localDiag)
	}
	if p.a.State() != StateUp || p.a.remoteDiscr != 201 {
		t.Fatalf("a did not come up with the new b: %+v", p.a.Status())
	}
}

func TestPollFinal(t *testing.T) {
	s := NewSession(Config{DesiredMinTx: 2 * time.Second, RequiredMinRx: 100 * time.Millisecond, DetectMult: 3}, 1, t0)
	s.Receive(t0, Packet{State: StateInit, DetectMult: 3, MyDiscriminator: 9, YourDiscriminator: 1, DesiredMinTx: 1e6, RequiredMinRx: 1e5})
	if s.State() != StateUp {
		t.Fatalf("not up: %s", s.State())
	}
	// Up at 2 s (an increase from 1 s): the 1 s interval stays until the
	// remote system answers the poll.
	if p := s.Packet(false); !p.Poll || p.DesiredMinTx != 2e6 || s.txInterval() != time.Second {
		t.Fatalf("poll %v, desired %d, interval %s", p.Poll, p.DesiredMinTx, s.txInterval())
	}
	if p := s.Packet(true); p.Poll || !p.Final {
		t.Fatalf("answering a poll: %+v", p)
	}
	s.Receive(t0, Packet{State: StateUp, Final: true, DetectMult: 3, MyDiscriminator: 9, YourDiscriminator: 1, DesiredMinTx: 1e6, RequiredMinRx: 1e5})
	if s.Packet(false).Poll || s.txInterval() != 2*time.Second {
		t.Fatalf("after final: poll %v, interval %s", s.polling, s.txInterval())
	}
	// A poll from the remote system is answered at once with Final.
	send, final := s.Receive(t0, Packet{State: StateUp, Poll: true, DetectMult: 3, MyDiscriminator: 9, YourDiscriminator: 1, DesiredMinTx: 1e6, RequiredMinRx: 1e5})
	if !send || !final {
		t.Fatalf("poll not answered: send %v final %v", send, final)
	}
}

func TestPassiveWaits(t *testing.T) {
	passive := fast
	passive.Passive = true
	p := newPair(t, passive, passive)
	p.run(5 * time.Second)
	if p.sentA != 0 || p.sentB != 0 {
		t.Fatalf("two passive sessions sent %d and %d packets", p.sentA, p.sentB)
	}
	p = newPair(t, passive, fast)
	p.run(5 * time.Second)
	if p.a.State() != StateUp {
		t.Fatalf("passive session with an active peer: %s", p.a.State())
	}
}

func TestRemoteMinRxZeroStopsTransmission(t *testing.T) {
	s := NewSession(fast, 1, t0)
	s.Receive(t0, Packet{State: StateDown, DetectMult: 3, MyDiscriminator: 9, DesiredMinTx: 1e6, RequiredMinRx: 0})
	// The detection time is 3 × 1 s.
	if s.Advance(t0.Add(2900*time.Millisecond)) || !s.NextEvent().Equal(s.detectDeadline) {
		t.Fatal("transmits to a system that asked for no packets")
	}
	// §6.8.18: a detection time later that request is forgotten, with
	// the system that made it.
	if !s.Advance(t0.Add(3*time.Second)) || s.Status().RemoteMinRx != time.Microsecond {
		t.Fatalf("silent after the remote system went away: %+v", s.Status())
	}
}

// TestExpiryLeavesSlowUpAtOnce: Up at 2 s between packets, the detection
// time expires: the next packet comes within the 1 s of Down, not 2 s
// after the last one.
func TestExpiryLeavesSlowUpAtOnce(t *testing.T) {
	s := NewSession(Config{DesiredMinTx: 2 * time.Second, RequiredMinRx: 100 * time.Millisecond, DetectMult: 3}, 1, t0)
	s.jitter = func() float64 { return 0.99 }
	s.Receive(t0, Packet{State: StateInit, DetectMult: 3, MyDiscriminator: 9, YourDiscriminator: 1, DesiredMinTx: 1e5, RequiredMinRx: 1e5})
	s.Receive(t0, Packet{State: StateUp, Final: true, DetectMult: 3, MyDiscriminator: 9, YourDiscriminator: 1, DesiredMinTx: 1e5, RequiredMinRx: 1e5})
	if !s.Advance(t0) || s.Status().TxInterval != 2*time.Second {
		t.Fatalf("not up at 2 s: %+v", s.Status())
	}
	expiry := t0.Add(300 * time.Millisecond)
	if !s.Advance(expiry) || s.State() != StateDown {
		t.Fatalf("detection time did not expire: %+v", s.Status())
	}
	if next := s.NextEvent(); next.IsZero() || next.Sub(expiry) > time.Second {
		t.Fatalf("next packet %s after going down, want at most 1 s", next.Sub(expiry))
	}
}

func TestJitterBounds(t *testing.T) {
	for _, c := range []struct {
		mult   uint8
		lo, hi time.Duration
	}{{3, 750 * time.Millisecond, time.Second}, {1, 750 * time.Millisecond, 900 * time.Millisecond}} {
		s := NewSession(Config{DetectMult: c.mult}, 1, t0)
		for _, j := range []float64{0, 0.999999} {
			s.jitter = func() float64 { return j }
			if d := s.jittered(t0).Sub(t0); d < c.lo || d > c.hi {
				t.Errorf("mult %d, jitter %v: interval %s outside [%s, %s]", c.mult, j, d, c.lo, c.hi)
			}
		}
	}
}
