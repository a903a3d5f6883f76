package reconnect

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var fast = Policy{ProbeInitial: 2 * time.Millisecond, ProbeCap: 10 * time.Millisecond, Spread: 5 * time.Millisecond, MissCap: 40 * time.Millisecond}

// Many waiters share one probe; all go on once it succeeds.
func TestGateSharesOneProbe(t *testing.T) {
	var ready atomic.Bool
	var probes atomic.Int64
	g := New(t.Context(), fast, func(context.Context) error {
		probes.Add(1)
		if !ready.Load() {
			return errors.New("connection refused")
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	var released atomic.Int64
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.Wait(t.Context()); err != nil {
				t.Error(err)
			}
			released.Add(1)
		}()
	}
	time.Sleep(100 * time.Millisecond)
	if n := released.Load(); n != 0 {
		t.Fatalf("%d waiters went on while the API server was down", n)
	}
	before := probes.Load()
	if before > 100*time.Millisecond.Milliseconds()/fast.ProbeCap.Milliseconds()*2 {
		t.Errorf("%d probes in 100 ms: not one probe for all waiters", before)
	}
	ready.Store(true)
	wg.Wait()
	if after := probes.Load(); after > before+2 {
		t.Errorf("%d probes after readiness, want 1 (at most 2 racing)", after-before)
	}
}

// A release followed by calls that still fail makes the next episode
// start with longer probes; a call that reaches the API server resets it.
func TestGateFalseRelease(t *testing.T) {
	g := New(t.Context(), fast, func(context.Context) error { return nil }, slog.New(slog.DiscardHandler))
	for i := range 3 {
		if err := g.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		g.mu.Lock()
		misses := g.misses
		g.mu.Unlock()
		if misses != i {
			t.Fatalf("episode %d: misses = %d, want %d", i, misses, i)
		}
	}
	g.Reached()
	if err := g.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if g.misses != 0 {
		t.Fatalf("misses = %d after a call reached the API server, want 0", g.misses)
	}
}

func TestGateWaitEndsWithContext(t *testing.T) {
	g := New(t.Context(), fast, func(context.Context) error { return errors.New("refused") }, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want the context's deadline", err)
	}
}
