package bfd

import (
	"math/rand/v2"
	"time"
)

// Config is what a session asks of the path. Zero fields take the
// defaults of MetalLB's and FRR's BFD profiles: 300 ms both ways, ×3.
type Config struct {
	// DesiredMinTx is the fastest this system wants to send while Up.
	DesiredMinTx time.Duration
	// RequiredMinRx is the fastest it accepts packets.
	RequiredMinRx time.Duration
	// DetectMult: the remote system declares this one down after this
	// many intervals without a packet.
	DetectMult uint8
	// Passive: send nothing until the remote system has spoken.
	Passive bool
}

const (
	DefaultInterval   = 300 * time.Millisecond
	DefaultDetectMult = 3
	// slowTx is bfd.DesiredMinTxInterval while the session is not Up
	// (§6.8.3: not less than one second).
	slowTx = time.Second
)

func (c Config) withDefaults() Config {
	if c.DesiredMinTx <= 0 {
		c.DesiredMinTx = DefaultInterval
	}
	if c.RequiredMinRx <= 0 {
		c.RequiredMinRx = DefaultInterval
	}
	if c.DetectMult == 0 {
		c.DetectMult = DefaultDetectMult
	}
	return c
}

// Session is one BFD session's state variables (§6.8.1) and its timers,
// driven by the caller: Receive for each packet demultiplexed to it,
// Advance when the clock passes NextEvent, Packet to build what to send.
// It does no I/O and reads no clock; it is not safe for concurrent use.
type Session struct {
	cfg Config

	state        State
	remoteState  State
	localDiscr   uint32
	remoteDiscr  uint32
	localDiag    Diag
	desiredMinTx time.Duration // bfd.DesiredMinTxInterval as advertised
	// txMin is the DesiredMinTx the transmit interval is computed from: it
	// lags an increase of desiredMinTx until its poll sequence ends.
	txMin          time.Duration
	remoteMinRx    time.Duration
	remoteMinTx    time.Duration
	remoteMult     uint8
	remoteDemand   bool
	polling        bool
	nextTx         time.Time
	detectDeadline time.Time // zero: no detection timer running
	changedAt      time.Time

	// jitter returns a fraction in [0,1); tests replace it.
	jitter func() float64
}

// NewSession starts a session in Down with the local discriminator given
// (non-zero, unique on this system).
func NewSession(cfg Config, localDiscr uint32, now time.Time) *Session {
	cfg = cfg.withDefaults()
	s := &Session{cfg: cfg, state: StateDown, remoteState: StateDown, localDiscr: localDiscr,
		desiredMinTx: slowTx, txMin: slowTx, remoteMinRx: time.Microsecond, changedAt: now, jitter: rand.Float64}
	s.nextTx = now // the first packet goes out at once (unless passive)
	return s
}

// Status is a snapshot of a session, for tables and logs.
type Status struct {
	State        State
	RemoteState  State
	LocalDiag    Diag
	LocalDiscr   uint32
	RemoteDiscr  uint32
	Since        time.Time
	TxInterval   time.Duration // negotiated, while Up
	DetectTime   time.Duration // for the remote system, while Up
	RemoteMult   uint8
	RemoteMinRx  time.Duration
	RemoteMinTx  time.Duration
	PollInFlight bool
}

func (s *Session) Status() Status {
	st := Status{State: s.state, RemoteState: s.remoteState, LocalDiag: s.localDiag, LocalDiscr: s.localDiscr,
		RemoteDiscr: s.remoteDiscr, Since: s.changedAt, RemoteMult: s.remoteMult, RemoteMinRx: s.remoteMinRx,
		RemoteMinTx: s.remoteMinTx, PollInFlight: s.polling}
	if s.state == StateUp {
		st.TxInterval = s.txInterval()
		st.DetectTime = s.detectTime()
	}
	return st
}

func (s *Session) State() State { return s.state }

// Config returns the session's configuration with defaults applied.
func (s *Session) Config() Config { return s.cfg }
