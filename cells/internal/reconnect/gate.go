package reconnect

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Gate is one agent's way back to the API server (see the package doc).
type Gate struct {
	policy Policy
	probe  func(context.Context) error
	log    *slog.Logger
	// life ends the probing when the agent stops.
	life context.Context

	mu sync.Mutex
	// back is closed when the current episode's probe succeeded; nil
	// while no episode runs.
	back chan struct{}
	// released: the last episode ended with a release, and no call has
	// reached the API server since (Reached).
	released bool
	// misses counts false releases in a row.
	misses int
}

// New is a gate that probes with probe (GET /readyz) until life ends.
func New(life context.Context, policy Policy, probe func(context.Context) error, log *slog.Logger) *Gate {
	return &Gate{policy: policy, probe: probe, log: log, life: life}
}

// Wait blocks the caller, whose request did not reach the API server,
// until the API server is ready again and the caller's own random delay
// has passed, or until ctx ends (then it returns ctx's error).
func (g *Gate) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-g.episode():
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(g.policy.SpreadDelay(rand.Float64())):
		return nil
	}
}

// Reached records that a call reached the API server: a release that
// preceded it was true, and the next episode starts with short probes.
func (g *Gate) Reached() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.released, g.misses = false, 0
}

// episode returns the channel of the running episode, starting one if
// none runs.
func (g *Gate) episode() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.back != nil {
		return g.back
	}
	if g.released {
		g.misses++ // released, yet the calls that followed failed
	}
	g.released = false
	g.back = make(chan struct{})
	go g.run(g.back, g.misses)
	return g.back
}

// run probes until the API server is ready, then releases every waiter.
func (g *Gate) run(back chan struct{}, misses int) {
	start := time.Now()
	g.log.Info("API server unreachable; probing /readyz until it is ready", "false-releases-in-a-row", misses)
	for step := 0; ; step++ {
		select {
		case <-g.life.Done():
			return // the agent stops; its waiters' contexts end too
		case <-time.After(g.policy.ProbeDelay(step, misses, rand.Float64())):
		}
		ctx, cancel := context.WithTimeout(g.life, 5*time.Second)
		err := g.probe(ctx)
		cancel()
		if err == nil {
			g.log.Info("API server ready again; reconnecting", "probes", step+1, "after", time.Since(start).Round(time.Millisecond))
			break
		}
		if step == 0 {
			g.log.Debug("API server not ready yet", "error", err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	close(back)
	g.back, g.released = nil, true
}
