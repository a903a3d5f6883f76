package bfd

import (
	"testing"
	"time"
)

// checked drives a Session as the transport does and checks after every
// call what RFC 5880 requires of it whatever the peer sends, against a
// model of its own: the state table of §6.8.6, the detection time of
// §6.8.4, the rates of §6.8.3 and §6.8.7 and the poll sequence of §6.5.
// The fuzz targets build on it.
type checked struct {
	t     testing.TB
	s     *Session
	cfg   Config // with defaults
	discr uint32

	// What the session's variables (§6.8.1) must be.
	state, remoteState State
	diag               Diag
	remoteDiscr        uint32
	remoteMinRx        time.Duration
	remoteMinTx        time.Duration
	remoteMult         uint8
	remoteDemand       bool
	polling            bool
	txMin              time.Duration // the DesiredMinTx the rate follows (§6.8.3)
	lastRx             time.Time     // zero: no detection timer
	detect             time.Duration // from the last packet received

	// The last periodic transmission, and the shortest transmit
	// interval in force at some point since.
	lastTx time.Time
	minIv  time.Duration
}

func newChecked(t testing.TB, cfg Config, discr uint32, now time.Time, jitter func() float64) *checked {
	s := NewSession(cfg, discr, now)
	s.jitter = jitter
	c := &checked{t: t, s: s, cfg: cfg.withDefaults(), discr: discr, state: StateDown, remoteState: StateDown,
		remoteMinRx: time.Microsecond, txMin: slowTx}
	c.check(now)
	return c
}

// receive hands the session a packet that passed Decode, as the server
// does, whatever its discriminators.
func (c *checked) receive(now time.Time, p Packet) (send, final bool) {
	c.t.Helper()
	if p.DetectMult == 0 || p.MyDiscriminator == 0 {
		c.t.Fatalf("§6.8.6: Decode passed %+v, which must be discarded", p)
	}
	before, beforePkt, beforeNext := c.s.Status(), c.s.Packet(false), c.s.NextEvent()
	send, final = c.s.Receive(now, p)
	if c.state == StateAdminDown || (p.YourDiscriminator != 0 && p.YourDiscriminator != c.discr) {
		// §6.8.6: discarded, as if it never came.
		if send || final || c.s.Status() != before || c.s.Packet(false) != beforePkt || !c.s.NextEvent().Equal(beforeNext) {
			c.t.Fatalf("§6.8.6: %s session (discriminator %d) acted on %+v: send %v final %v, status %+v, was %+v",
				c.state, c.discr, p, send, final, c.s.Status(), before)
		}
		return send, final
	}
	prev := c.state
	c.remoteDiscr, c.remoteState, c.remoteDemand = p.MyDiscriminator, p.State, p.Demand
	c.remoteMinRx, c.remoteMinTx, c.remoteMult = usec(p.RequiredMinRx), usec(p.DesiredMinTx), p.DetectMult
	if p.Final && c.polling {
		c.polling, c.txMin = false, c.cfg.DesiredMinTx
	}
	c.lastRx, c.detect = now, time.Duration(p.DetectMult)*max(c.cfg.RequiredMinRx, c.remoteMinTx)
	c.transition(p.State)
	if final != p.Poll || (p.Poll && !send) {
		c.t.Fatalf("§6.5: received poll %v, answered send %v final %v", p.Poll, send, final)
	}
	changed := c.state != prev
	if send != (p.Poll || (changed && c.mayTransmit())) {
		c.t.Fatalf("§6.8.7: %s -> %s on %+v: send %v", prev, c.state, p, send)
	}
	c.noteInterval()
	c.check(now)
	return send, final
}

// transition is the table of §6.8.6, from the RFC's text.
func (c *checked) transition(remote State) {
	switch {
	case remote == StateAdminDown:
		if c.state != StateDown {
			c.diag = DiagNeighborDown
			c.goDown()
		}
	case c.state == StateDown && remote == StateDown:
		c.state = StateInit
	case c.state == StateDown && remote == StateInit:
		c.goUp()
	case c.state == StateInit && (remote == StateInit || remote == StateUp):
		c.goUp()
	case c.state == StateUp && remote == StateDown:
		c.diag = DiagNeighborDown
		c.goDown()
	}
}

// goUp: the fast rate is advertised at once with a poll; a decrease
// applies at once, an increase only after the Final (§6.8.3).
func (c *checked) goUp() {
	c.state = StateUp
	if d := c.cfg.DesiredMinTx; d != slowTx {
		c.polling = true
		if d < slowTx {
			c.txMin = d
		}
	}
}

func (c *checked) goDown() {
	c.state, c.polling, c.txMin = StateDown, false, slowTx
}

// advance runs the session's timers to now.
func (c *checked) advance(now time.Time) bool {
	c.t.Helper()
	prev := c.state
	send := c.s.Advance(now)
	if !c.lastRx.IsZero() && !now.Before(c.lastRx.Add(c.detect)) {
		// §6.8.4: a detection time without a packet; §6.8.1: the remote
		// discriminator is forgotten; §6.8.18: so is the remote system's
		// Required Min RX Interval, back to 1 µs.
		c.lastRx, c.remoteDiscr, c.remoteState, c.remoteMinRx = time.Time{}, 0, StateDown, time.Microsecond
		if c.state == StateInit || c.state == StateUp {
			c.diag = DiagControlDetectExpired
			c.goDown()
		}
	}
	if send && !c.mayTransmit() {
		c.t.Fatalf("§6.8.7: %s session sent while it may not (passive %v, remote discr %d, remote min rx %s, remote demand %v)",
			c.state, c.cfg.Passive, c.remoteDiscr, c.remoteMinRx, c.remoteDemand)
	}
	if send && c.state == prev {
		c.periodic(now)
	}
	c.noteInterval()
	c.check(now)
	return send
}

// periodic checks a periodic transmission against the one before: no
// sooner than the transmit interval less 25 % jitter (§6.8.7), and the
// next one no later than the interval (less 10 % with a multiplier of 1).
func (c *checked) periodic(now time.Time) {
	if !c.lastTx.IsZero() && now.Sub(c.lastTx) < c.minIv*3/4 {
		c.t.Fatalf("§6.8.7: %s session sent %s after its last periodic packet; interval %s",
			c.state, now.Sub(c.lastTx), c.minIv)
	}
	c.lastTx, c.minIv = now, c.interval()
	limit := c.minIv
	if c.cfg.DetectMult == 1 {
		limit = c.minIv * 9 / 10
	}
	if next := c.s.NextEvent(); next.IsZero() || next.Sub(now) > limit {
		c.t.Fatalf("§6.8.7: after a periodic packet at %s the next is due at %s; interval %s", now, next, c.minIv)
	}
}

// interval is the negotiated transmit interval (§6.8.7).
func (c *checked) interval() time.Duration { return max(c.txMin, c.remoteMinRx) }

func (c *checked) noteInterval() {
	if !c.lastTx.IsZero() {
		c.minIv = min(c.minIv, c.interval())
	}
}

// mayTransmit: §6.8.7's conditions for periodic transmission (and §6.1
// for a passive system).
func (c *checked) mayTransmit() bool {
	return !(c.cfg.Passive && c.remoteDiscr == 0) && c.remoteMinRx != 0 &&
		!(c.remoteDemand && c.state == StateUp && c.remoteState == StateUp && !c.polling)
}

// adminDown is the local system taking the session down (§6.8.16).
func (c *checked) adminDown(now time.Time) {
	c.t.Helper()
	c.s.AdminDown(now)
	c.state, c.diag, c.polling, c.txMin, c.lastRx = StateAdminDown, DiagAdminDown, false, slowTx, time.Time{}
	c.noteInterval()
	c.check(now)
}

// packet is what the session sends now: a valid packet (§6.8.6's checks
// of the receiving system pass) that says what the model says.
func (c *checked) packet(final bool) Packet {
	c.t.Helper()
	p := c.s.Packet(final)
	advertised := slowTx
	if c.state == StateUp {
		advertised = c.cfg.DesiredMinTx
	}
	want := Packet{Diag: c.diag, State: c.state, Poll: c.polling && !final, Final: final,
		DetectMult: c.cfg.DetectMult, MyDiscriminator: c.discr, YourDiscriminator: c.remoteDiscr,
		DesiredMinTx: durUsec(advertised), RequiredMinRx: durUsec(c.cfg.RequiredMinRx)}
	if p != want {
		c.t.Fatalf("sends %+v, want %+v", p, want)
	}
	if dec, err := Decode(p.Append(nil)); err != nil || dec != p {
		c.t.Fatalf("sends %+v, which decodes as %+v, %v", p, dec, err)
	}
	return p
}

// check compares the session's status with the model.
func (c *checked) check(now time.Time) {
	c.t.Helper()
	st := c.s.Status()
	want := Status{State: c.state, RemoteState: c.remoteState, LocalDiag: c.diag, LocalDiscr: c.discr,
		RemoteDiscr: c.remoteDiscr, Since: st.Since, RemoteMult: c.remoteMult, RemoteMinRx: c.remoteMinRx,
		RemoteMinTx: c.remoteMinTx, PollInFlight: c.polling}
	if c.state == StateUp {
		// §6.8.2, §6.8.7: the local rate is the larger of what this
		// system wants and the remote system accepts; §6.8.4: the
		// remote system's multiplier times its rate.
		want.TxInterval, want.DetectTime = c.interval(), c.detect
	}
	if st != want {
		c.t.Fatalf("status %+v, want %+v", st, want)
	}
	if (c.state == StateInit || c.state == StateUp) && !now.Before(c.lastRx.Add(c.detect)) {
		c.t.Fatalf("§6.8.4: %s at %s, a detection time (%s) after the last packet (%s)", c.state, now, c.detect, c.lastRx)
	}
	next := c.s.NextEvent()
	if !c.lastRx.IsZero() && (next.IsZero() || next.After(c.lastRx.Add(c.detect))) {
		c.t.Fatalf("§6.8.4: next event %s is past the detection deadline %s", next, c.lastRx.Add(c.detect))
	}
	// §6.8.7: a session that may transmit sends within its interval.
	if c.mayTransmit() && (next.IsZero() || next.Sub(now) > c.interval()) {
		c.t.Fatalf("§6.8.7: %s session may transmit every %s, but its next event is %s away", c.state, c.interval(), next.Sub(now))
	}
}
