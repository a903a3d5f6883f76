package bfd

import (
	"slices"
	"testing"
	"time"
)

// A link between two sessions that drops, duplicates, delays and so
// reorders packets as the fuzz input says, until the input runs out;
// from then on it delivers every packet after healedDelay, in order.
const (
	delayStep   = 40 * time.Millisecond
	maxDelay    = 63 * delayStep
	healedDelay = time.Millisecond
)

type flight struct {
	at  time.Time
	seq int
	to  int
	p   Packet
}

// pairSim is two sessions (sides 0 and 1) on a simulated clock. A side
// restarts as the server does when its peer config changes: the session
// ends AdminDown and a new one, with a new discriminator, starts Down.
type pairSim struct {
	t       *testing.T
	in      *fuzzInput
	now     time.Time
	side    [2]*checked
	flights []flight
	seq     int
	discr   uint32
	healed  time.Time // zero: the link still misbehaves
	// configs is every configuration a side has had; bound is the
	// longest detection time any two of them give (see start).
	configs []Config
	bound   time.Duration
	// downSince: when the side went Down or AdminDown and has stayed so
	// (zero: it is Init or Up).
	downSince  [2]time.Time
	restarting bool
}

func newPairSim(t *testing.T, in *fuzzInput) *pairSim {
	s := &pairSim{t: t, in: in, now: t0, discr: 100}
	for i := range s.side {
		s.start(i)
	}
	return s
}

// Transmit intervals a side's configuration is made of (the peer config
// allows 10 ms to 60 s).
var pairIntervals = [...]time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	300 * time.Millisecond, 900 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second}

// start puts a new session on side i, its configuration from the input.
func (s *pairSim) start(i int) {
	b, m := s.in.byte(), s.in.byte()
	cfg := Config{DesiredMinTx: pairIntervals[b&7], RequiredMinRx: pairIntervals[b>>3&7], DetectMult: 1 + m%5,
		Passive: b&0x40 != 0}
	s.discr++
	s.side[i] = newChecked(s.t, cfg, s.discr, s.now, s.in.jitter())
	s.configs = append(s.configs, cfg)
	// A side that is up keeps hearing packets the other side sent before
	// it went down for maxDelay, then waits a detection time: the
	// remote multiplier times the larger of its own receive interval and
	// the remote transmit interval (1 s while not up).
	for _, a := range s.configs {
		for _, r := range s.configs {
			s.bound = max(s.bound, time.Duration(r.DetectMult)*max(a.RequiredMinRx, r.DesiredMinTx, slowTx))
		}
	}
}

// restart ends side i's session (three AdminDown packets, as the runner
// sends) and starts another.
func (s *pairSim) restart(i int) {
	s.restarting = true
	s.side[i].adminDown(s.now)
	for range 3 {
		s.send(i, false)
	}
	s.restarting = false
	s.start(i)
}

// send puts side from's packet on the link, to its fate.
func (s *pairSim) send(from int, final bool) {
	p := s.side[from].packet(final)
	if s.healed.IsZero() && s.in.done() {
		s.healed = s.now
	}
	put := func(d time.Duration) {
		s.seq++
		s.flights = append(s.flights, flight{at: s.now.Add(d), seq: s.seq, to: 1 - from, p: p})
	}
	if !s.healed.IsZero() {
		put(healedDelay)
		return
	}
	f := s.in.byte()
	delay := time.Duration(f&63) * delayStep
	switch f >> 6 {
	case 0:
		put(delay)
	case 1: // lost
	case 2:
		put(delay)
		put(time.Duration(s.in.byte()&63) * delayStep)
	case 3:
		put(delay)
		if !s.restarting {
			s.restart(int(f & 1))
		}
	}
}

// step runs the earliest event: the sessions' timers first, then the
// packets that arrive at that time, in the order they were sent. false:
// nothing will ever happen.
func (s *pairSim) step() bool {
	next := time.Time{}
	for _, c := range s.side {
		if e := c.s.NextEvent(); !e.IsZero() && (next.IsZero() || e.Before(next)) {
			next = e
		}
	}
	for _, f := range s.flights {
		if next.IsZero() || f.at.Before(next) {
			next = f.at
		}
	}
	if next.IsZero() {
		return false
	}
	s.now = later(s.now, next)
	for i := range s.side {
		// A packet sent may restart the other side: index, not range.
		c := s.side[i]
		if e := c.s.NextEvent(); !e.IsZero() && !e.After(s.now) && c.advance(s.now) {
			s.send(i, false)
		}
	}
	slices.SortFunc(s.flights, func(a, b flight) int { return a.at.Compare(b.at)*2 + cmpInt(a.seq, b.seq) })
	for len(s.flights) > 0 && !s.flights[0].at.After(s.now) {
		f := s.flights[0]
		s.flights = s.flights[1:]
		if send, final := s.side[f.to].receive(s.now, f.p); send {
			s.send(f.to, final)
		}
	}
	s.checkSafety()
	return true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkSafety: a side is not up longer than the link's delay plus a
// detection time after the other went down (§6.8.4: nothing keeps it up
// but Init and Up packets, and the other side sends none while down).
func (s *pairSim) checkSafety() {
	for i, c := range s.side {
		if c.state == StateDown || c.state == StateAdminDown {
			if s.downSince[i].IsZero() {
				s.downSince[i] = s.now
			}
		} else {
			s.downSince[i] = time.Time{}
		}
	}
	for i, c := range s.side {
		since := s.downSince[1-i]
		if c.state == StateUp && !since.IsZero() && s.now.Sub(since) >= maxDelay+s.bound {
			s.t.Fatalf("at %s side %d is up, side %d down since %s (bound %s + %s)",
				s.now.Sub(t0), i, 1-i, since.Sub(t0), maxDelay, s.bound)
		}
	}
}

// run steps until the clock passes until.
func (s *pairSim) run(until time.Time) {
	for s.now.Before(until) && s.step() {
	}
}

// FuzzTwoSessions runs two sessions back to back through a link that
// misbehaves as the input says (see pairSim.send), each checked as in
// FuzzSessionInvariants, and the pair for safety at every step. Once
// the link has healed for the drain of the packets in flight and a few
// detection times, both sides must be up, agree on each other's
// discriminators and on the timers of §6.8.2 and §6.8.4, and stay so;
// unless both are passive (§6.1), when neither is up.
func FuzzTwoSessions(f *testing.F) {
	for _, s := range pairSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := newPairSim(t, &fuzzInput{b: b})
		// The misbehaving part: until the input runs out (each packet
		// sent reads one or two bytes), at most an hour.
		for s.healed.IsZero() && s.now.Before(t0.Add(time.Hour)) && s.step() {
			if s.in.done() {
				s.healed = s.now
			}
		}
		if s.healed.IsZero() {
			s.healed = s.now
		}
		settle := maxDelay + 3*s.bound + 5*time.Second
		s.run(s.healed.Add(settle))
		a, b2 := s.side[0], s.side[1]
		if a.cfg.Passive && b2.cfg.Passive {
			if a.state == StateUp || b2.state == StateUp {
				t.Fatalf("two passive sessions came up: %s/%s", a.state, b2.state)
			}
			return
		}
		s.checkAgreement()
		// And stay so.
		changedA, changedB := a.s.Status().Since, b2.s.Status().Since
		s.run(s.now.Add(2 * s.bound))
		if a.s.Status().Since != changedA || b2.s.Status().Since != changedB {
			t.Fatalf("healed link: the sessions changed state again: %s/%s", a.state, b2.state)
		}
		s.checkAgreement()
	})
}

// checkAgreement: both up, each knowing the other's discriminator, no
// poll in flight, each sending at the larger of its desired interval and
// the other's required one, each detecting after the other's multiplier
// of the other's interval.
func (s *pairSim) checkAgreement() {
	t := s.t
	for i, c := range s.side {
		o := s.side[1-i]
		st := c.s.Status()
		if st.State != StateUp || st.RemoteDiscr != o.discr || st.PollInFlight {
			t.Fatalf("at %s, %s after the link healed: side %d %+v, other's discriminator %d",
				s.now.Sub(t0), s.now.Sub(s.healed), i, st, o.discr)
		}
		wantTx := max(c.cfg.DesiredMinTx, o.cfg.RequiredMinRx)
		wantDetect := time.Duration(o.cfg.DetectMult) * max(c.cfg.RequiredMinRx, o.cfg.DesiredMinTx)
		if st.TxInterval != wantTx || st.DetectTime != wantDetect {
			t.Fatalf("side %d: tx %s detect %s, want %s and %s (config %+v, other's %+v)",
				i, st.TxInterval, st.DetectTime, wantTx, wantDetect, c.cfg, o.cfg)
		}
	}
}

// pairSeed builds FuzzTwoSessions inputs: per side the interval indexes
// (desired, required, passive bit), the multiplier less one and the
// jitter; then one fate byte per packet sent.
func pairSeed(cfgs [2][2]byte, fates ...byte) []byte {
	var b []byte
	for _, c := range cfgs {
		b = append(b, c[0], c[1], 0, 0, 0, 1, 0, 0, 0, 2)
	}
	return append(b, fates...)
}

// Fates of a packet.
const (
	fateDeliver = 0x00 // | delay in 40 ms steps
	fateLose    = 0x40
	fateDup     = 0x80 // | delay; the next byte: the copy's delay
	fateRestart = 0xc0 // | delay; restart side delay&1: three fates for
	// its AdminDown packets follow, then the new session's configuration
)

func pairSeeds() [][]byte {
	fast := [2]byte{2 | 2<<3, 2} // 100 ms both ways, ×3
	slow := [2]byte{7 | 3<<3, 0} // sends at 2 s, receives at 300 ms, ×1
	fastest := [2]byte{0, 4}     // 10 ms both ways, ×5
	passive := [2]byte{3 | 3<<3 | 0x40, 2}
	lossy := make([]byte, 0, 64)
	for i := range 64 {
		lossy = append(lossy, [...]byte{fateDeliver | 3, fateLose, fateDup | 20, 7, fateDeliver | 40}[i%5])
	}
	restart := func(side byte, cfg [2]byte, adminDownFates ...byte) []byte {
		return append(append([]byte{fateRestart | side}, adminDownFates...), cfg[0], cfg[1], 0, 0, 0, 5, 0, 0, 0, 6)
	}
	return [][]byte{
		pairSeed([2][2]byte{fast, fast}),
		pairSeed([2][2]byte{fast, slow}, lossy...),
		pairSeed([2][2]byte{passive, fast}, slices.Concat([]byte{fateLose, fateLose, fateDeliver | 30},
			restart(1, slow, fateLose, fateLose, fateLose), []byte{fateDeliver, fateDeliver, fateDeliver | 50})...),
		pairSeed([2][2]byte{passive, passive}),
		pairSeed([2][2]byte{slow, fastest}, slices.Concat(lossy[:20], restart(0, fast, fateDeliver, fateLose, fateDup|1, 2),
			[]byte{fateLose, fateLose, fateLose})...),
		pairSeed([2][2]byte{fastest, fast}, slices.Concat(lossy[:30], restart(1, passive, fateDeliver|60, fateDeliver|30, fateLose))...),
	}
}
