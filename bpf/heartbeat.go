package bpf

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// The heartbeat: the deadline in the config map after which the program
// stops answering by itself, so that an agent that froze or died cannot
// keep answering for IPs another node has taken over.

// Heartbeat tells the datapath that the agent is alive: the responder
// answers only while less than maxAge has passed since the last Heartbeat.
// Until the first Heartbeat it answers nothing. The time is CLOCK_MONOTONIC,
// the clock of bpf_ktime_get_ns.
func (r *Responder) Heartbeat(maxAge time.Duration) error {
	if maxAge < 0 {
		return fmt.Errorf("bpf: negative heartbeat max age %v", maxAge)
	}
	return r.heartbeat(func() time.Duration { return maxAge })
}

// HeartbeatUntil makes the program answer until deadline and no longer.
// Unlike Heartbeat(time.Until(deadline)), a pause of this process between
// the caller's clock reading and the map write cannot stretch the deadline:
// the kernel clock is read first, the remaining time after it, so a pause
// in between only shortens it.
func (r *Responder) HeartbeatUntil(deadline time.Time) error {
	return r.heartbeat(func() time.Duration { return max(time.Until(deadline), 0) })
}

// heartbeat writes the kernel clock's now and the max age, which maxAge
// computes after now was read.
func (r *Responder) heartbeat(maxAge func() time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	now, err := monotonicNow()
	if err != nil {
		return err
	}
	cfg := l2responderL2ResponderConfig{HeartbeatNs: now, MaxAgeNs: uint64(maxAge())}
	if err := r.config.Put(uint32(0), &cfg); err != nil {
		return fmt.Errorf("bpf: writing heartbeat: %w", err)
	}
	return nil
}

// monotonicNow is CLOCK_MONOTONIC in nanoseconds, the clock of
// bpf_ktime_get_ns.
func monotonicNow() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("bpf: reading CLOCK_MONOTONIC: %w", err)
	}
	return uint64(ts.Nano()), nil
}
