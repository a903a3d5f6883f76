// Package reconnect decides when an agent talks to the API server again
// after it stopped answering: one Gate per agent, shared by every
// reflector (and the Lease watches), probes the API server's /readyz with
// a jittered exponential backoff while it refuses connections, and
// releases everyone waiting as soon as it is ready, each after a small
// random delay of its own. So reconnecting costs a restarting API server
// one cheap request per agent per probe interval, not one per watch, and
// the agents' real requests follow the moment it is ready, spread over a
// fraction of a second per agent.
//
// What it does not short-cut: an API server that answers and refuses
// (429 Too Many Requests, 5xx) is left to client-go's own backoff (0.8 s
// doubling to 30 s): that is an overloaded server, not a restarted one.
package reconnect

import (
	"errors"
	"net"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Policy are the gate's timings.
type Policy struct {
	// ProbeInitial is the first probe's delay after the API server became
	// unreachable; each further probe doubles it up to ProbeCap.
	ProbeInitial time.Duration
	// ProbeCap bounds the probe interval while the API server refuses
	// connections: it is how late, at most, an agent notices that the API
	// server is ready again.
	ProbeCap time.Duration
	// Spread: once the probe succeeds, each waiter goes on after a random
	// delay in [0, Spread).
	Spread time.Duration
	// MissCap bounds the probe interval once a release turned out false
	// (the probe succeeded, the calls after it did not reach the API
	// server): from then on the gate backs off as client-go does.
	MissCap time.Duration
}

// Defaults: an agent notices a ready API server within a second, and its
// reflectors follow within another quarter of a second.
var Defaults = Policy{
	ProbeInitial: 200 * time.Millisecond,
	ProbeCap:     time.Second,
	Spread:       250 * time.Millisecond,
	MissCap:      30 * time.Second,
}

// ProbeDelay is the wait before probe number step (from 0) of an episode
// after misses false releases in a row; u is uniform in [0, 1). The delay
// is uniform in [d/2, d), d being ProbeInitial doubled step+misses times
// and capped (ProbeCap, or MissCap after a false release): "equal jitter",
// so that agents which lost the API server at the same moment drift apart
// and the probes of many agents arrive evenly, never in waves.
func (p Policy) ProbeDelay(step, misses int, u float64) time.Duration {
	limit := p.ProbeCap
	if misses > 0 {
		limit = max(p.MissCap, p.ProbeCap)
	}
	d := p.ProbeInitial
	for i := 0; i < step+misses && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d/2 + time.Duration(u*float64(d/2))
}

// SpreadDelay is a waiter's delay after a release; u is uniform in [0, 1).
func (p Policy) SpreadDelay(u float64) time.Duration {
	return time.Duration(u * float64(p.Spread))
}

// Unreachable reports whether err means the request never reached an API
// server that answers: the connection was refused, reset or cut, could not
// be dialed, or its TLS handshake or HTTP/2 health check went unanswered (a
// frozen API server). Only these wait for the gate; every answer of the API
// server, errors included, is left to the caller's own backoff.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	if utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "TLS handshake timeout") || strings.Contains(msg, "http2: client connection lost")
}
