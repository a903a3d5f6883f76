package bfd

import "time"

// Receive applies a packet already decoded, validated and demultiplexed to
// this session (RFC 5880 §6.8.6 from "If bfd.SessionState is AdminDown"
// on). send: a packet should go out now, final: with the Final bit (the
// remote system polled, §6.5: it is answered at once, whatever the
// transmit timer says).
func (s *Session) Receive(now time.Time, p Packet) (send, final bool) {
	if s.state == StateAdminDown {
		return false, false
	}
	if p.YourDiscriminator != 0 && p.YourDiscriminator != s.localDiscr {
		return false, false
	}
	s.remoteDiscr = p.MyDiscriminator
	s.remoteState = p.State
	s.remoteDemand = p.Demand
	s.remoteMinRx = usec(p.RequiredMinRx)
	s.remoteMinTx = usec(p.DesiredMinTx)
	s.remoteMult = p.DetectMult
	if p.Final && s.polling {
		// The remote system has seen our new timers: an increased
		// transmit interval may now be used.
		s.polling = false
		s.txMin = s.desiredMinTx
	}
	s.detectDeadline = now.Add(s.detectTime())

	prev := s.state
	s.transition(now, p.State)
	s.expedite(now)
	stateChanged := s.state != prev
	return p.Poll || (stateChanged && s.mayTransmit()), p.Poll
}

// transition is the state machine of §6.8.6 for a packet in remote state.
func (s *Session) transition(now time.Time, remote State) {
	if remote == StateAdminDown {
		if s.state != StateDown {
			s.localDiag = DiagNeighborDown
			s.goDown(now)
		}
		return
	}
	switch s.state {
	case StateDown:
		switch remote {
		case StateDown:
			s.setState(now, StateInit)
		case StateInit:
			s.goUp(now)
		}
	case StateInit:
		if remote == StateInit || remote == StateUp {
			s.goUp(now)
		}
	case StateUp:
		if remote == StateDown {
			s.localDiag = DiagNeighborDown
			s.goDown(now)
		}
	}
}

// Advance runs the timers up to now: the detection time (§6.8.4) and the
// periodic transmission (§6.8.7). send: a packet should go out now.
func (s *Session) Advance(now time.Time) (send bool) {
	if !s.detectDeadline.IsZero() && !now.Before(s.detectDeadline) {
		s.detectDeadline = time.Time{}
		// Forgotten after a detection time of silence: the remote
		// discriminator (§6.8.1) and the remote Required Min RX
		// Interval (§6.8.18): a system that asked for few packets or none
		// and went away does not keep this one slow or silent.
		s.remoteDiscr, s.remoteMinRx = 0, time.Microsecond
		s.remoteState = StateDown
		if s.state == StateInit || s.state == StateUp {
			s.localDiag = DiagControlDetectExpired
			s.goDown(now)
			send = s.mayTransmit()
		}
		s.expedite(now)
	}
	if s.mayTransmit() && !now.Before(s.nextTx) {
		send = true
		s.nextTx = s.jittered(now)
	}
	return send
}

// expedite: a transmit interval now shorter than the wait scheduled
// applies to the next packet, not the one after (the remote system asked
// for more, or the session left a slow Up for the 1 s of Down or
// AdminDown).
func (s *Session) expedite(now time.Time) {
	if s.nextTx.After(now.Add(s.txInterval())) {
		s.nextTx = s.jittered(now)
	}
}

// NextEvent is when Advance has something to do; zero: nothing until a
// packet arrives.
func (s *Session) NextEvent() time.Time {
	next := s.detectDeadline
	if s.mayTransmit() && (next.IsZero() || s.nextTx.Before(next)) {
		next = s.nextTx
	}
	return next
}

// Packet is the control packet to send now; final answers a poll.
func (s *Session) Packet(final bool) Packet {
	return Packet{
		Diag:              s.localDiag,
		State:             s.state,
		Poll:              s.polling && !final, // §6.5: never both
		Final:             final,
		DetectMult:        s.cfg.DetectMult,
		MyDiscriminator:   s.localDiscr,
		YourDiscriminator: s.remoteDiscr,
		DesiredMinTx:      durUsec(s.desiredMinTx),
		RequiredMinRx:     durUsec(s.cfg.RequiredMinRx),
	}
}

// AdminDown takes the session down on purpose (the peer is removed): the
// packets sent from now on tell the remote system not to take it as a
// failure of the path. Packets received are ignored from then on.
func (s *Session) AdminDown(now time.Time) {
	s.localDiag = DiagAdminDown
	s.setState(now, StateAdminDown)
	s.polling = false
	s.detectDeadline = time.Time{}
	s.desiredMinTx, s.txMin = slowTx, slowTx
	s.expedite(now)
}

// mayTransmit: §6.8.7's conditions for periodic transmission.
func (s *Session) mayTransmit() bool {
	switch {
	case s.cfg.Passive && s.remoteDiscr == 0:
		return false
	case s.remoteMinRx == 0:
		return false
	case s.remoteDemand && s.state == StateUp && s.remoteState == StateUp && !s.polling:
		return false
	}
	return true
}

func (s *Session) goUp(now time.Time) {
	s.setState(now, StateUp)
	s.setDesiredMinTx(s.cfg.DesiredMinTx)
}

// goDown: back to the slow rate at once, no poll (§6.8.3 restricts only
// changes while Up).
func (s *Session) goDown(now time.Time) {
	s.setState(now, StateDown)
	s.polling = false
	s.desiredMinTx, s.txMin = slowTx, slowTx
}

func (s *Session) setState(now time.Time, st State) {
	if s.state != st {
		s.state, s.changedAt = st, now
	}
}

// setDesiredMinTx changes bfd.DesiredMinTxInterval with a poll sequence
// (§6.8.3). A decrease applies at once; an increase while Up waits for
// the Final, so the remote system never sees packets slower than it
// expects.
func (s *Session) setDesiredMinTx(d time.Duration) {
	if d == s.desiredMinTx {
		return
	}
	increase := d > s.desiredMinTx
	s.desiredMinTx = d
	if !(increase && s.state == StateUp) {
		s.txMin = d
	}
	s.polling = true
}

// txInterval is the negotiated interval between packets (§6.8.7).
func (s *Session) txInterval() time.Duration {
	return max(s.txMin, s.remoteMinRx)
}

// detectTime is how long the remote system may stay silent (§6.8.4,
// asynchronous mode).
func (s *Session) detectTime() time.Duration {
	return time.Duration(s.remoteMult) * max(s.cfg.RequiredMinRx, s.remoteMinTx)
}

// jittered is now plus the transmit interval less 0–25% (§6.8.7), or less
// 10–25% with a detect multiplier of 1.
func (s *Session) jittered(now time.Time) time.Time {
	iv := float64(s.txInterval())
	lo, span := 0.75, 0.25
	if s.cfg.DetectMult == 1 {
		span = 0.15
	}
	return now.Add(time.Duration(iv * (lo + span*s.jitter())))
}

func usec(v uint32) time.Duration { return time.Duration(v) * time.Microsecond }

func durUsec(d time.Duration) uint32 {
	us := d / time.Microsecond
	if us > 0xffffffff {
		return 0xffffffff
	}
	return uint32(us)
}
