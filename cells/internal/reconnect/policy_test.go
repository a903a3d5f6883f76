package reconnect

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestProbeDelay(t *testing.T) {
	p := Defaults
	for _, tt := range []struct {
		step, misses int
		lo, hi       time.Duration
	}{
		{0, 0, 100 * time.Millisecond, 200 * time.Millisecond},
		{1, 0, 200 * time.Millisecond, 400 * time.Millisecond},
		{2, 0, 400 * time.Millisecond, 800 * time.Millisecond},
		{3, 0, 500 * time.Millisecond, time.Second}, // capped at ProbeCap
		{50, 0, 500 * time.Millisecond, time.Second},
		{0, 1, 200 * time.Millisecond, 400 * time.Millisecond}, // after a false release: further on
		{5, 3, 15 * time.Second, 30 * time.Second},             // and capped at MissCap
	} {
		for _, u := range []float64{0, 0.5, 0.999999} {
			d := p.ProbeDelay(tt.step, tt.misses, u)
			if d < tt.lo || d >= tt.hi {
				t.Errorf("ProbeDelay(%d, %d, %v) = %s, want in [%s, %s)", tt.step, tt.misses, u, d, tt.lo, tt.hi)
			}
		}
	}
}

// TestReconnectSpread simulates many agents that lost the API server at
// moments spread over one second, probing with the default policy, and
// the API server ready at a random moment 20 s later: when does each agent
// notice, and how evenly do their probes and reconnections arrive? The
// figures are logged (go test -v); the test checks the bounds the policy
// promises: every agent within ProbeCap + Spread of readiness, and no
// 100 ms slot with more than 3 times its fair share of agents.
func TestReconnectSpread(t *testing.T) {
	const agents = 1000
	p := Defaults
	rng := rand.New(rand.NewPCG(1, 2))
	down := 20 * time.Second
	var reconnect []time.Duration // after ready
	for range agents {
		lost := time.Duration(rng.Float64() * float64(time.Second))
		at := lost
		step := 0
		for at < down {
			at += p.ProbeDelay(step, 0, rng.Float64())
			step++
		}
		reconnect = append(reconnect, at-down+p.SpreadDelay(rng.Float64()))
	}
	slices.Sort(reconnect)
	window := p.ProbeCap + p.Spread
	if last := reconnect[len(reconnect)-1]; last > window {
		t.Errorf("the last agent reconnects %s after ready, more than ProbeCap + Spread = %s", last, window)
	}
	slots := make([]int, int(window/(100*time.Millisecond))+1)
	for _, d := range reconnect {
		slots[d/(100*time.Millisecond)]++
	}
	fair := float64(agents) / (float64(window) / float64(100*time.Millisecond))
	for i, n := range slots {
		if float64(n) > 3*fair {
			t.Errorf("%d of %d agents reconnect in [%dms, %dms): more than 3 times the fair share %.0f", n, agents, i*100, (i+1)*100, fair)
		}
	}
	t.Logf("%d agents: reconnect after ready p50 %s, p90 %s, max %s; per 100 ms: %v",
		agents, reconnect[agents/2].Round(time.Millisecond), reconnect[agents*9/10].Round(time.Millisecond),
		reconnect[agents-1].Round(time.Millisecond), slots)
}

func TestUnreachable(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("Get \"https://x\": %w", &net.OpError{Op: "dial", Err: syscall.EHOSTUNREACH}), true},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{io.ErrUnexpectedEOF, true},
		{errors.New("Get \"https://x/api/v1/services\": net/http: TLS handshake timeout"), true},
		{errors.New("Get \"https://x/api/v1/services\": http2: client connection lost"), true},
		{errors.New("the server has received too many requests"), false},
		{errors.New("forbidden"), false},
	} {
		if got := Unreachable(tt.err); got != tt.want {
			t.Errorf("Unreachable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
