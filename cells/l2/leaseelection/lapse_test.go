package leaseelection

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A holder whose renewal runs out stops answering and says why, keeps its
// Lease, and answers again once a renewal lands.
func TestLapsedRenewalWithdrawsAndSaysWhy(t *testing.T) {
	w := newLeavingWorld(t)
	var logged bytes.Buffer
	w.Log = slog.New(slog.NewTextHandler(&logged, nil))
	now := time.Now()
	sel := groupOf("web", "198.18.0.1")
	c := w.held("web", now.Add(time.Second))
	campaigns := map[string]*campaign{"web": c}
	gone := map[string]leaving{}
	w.sync(sel, campaigns, gone)
	w.responderDone()

	c.mu.Lock()
	c.validUntil = now.Add(-time.Millisecond) // the renewal is late
	c.mu.Unlock()
	w.sync(sel, campaigns, gone)
	if en, ok := w.entry("198.18.0.1"); !ok || !en.Withdrawn {
		t.Fatalf("entry %+v (in the table: %v) once the renewal ran out, want withdrawn", en, ok)
	}
	if out := logged.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "last renewal ran out") || !strings.Contains(out, "lease=web") {
		t.Errorf("log %q, want a warning naming the lease and the lapsed renewal", out)
	}
	if len(w.released) != 0 {
		t.Errorf("released %v: a late renewal must not give the Lease up", w.released)
	}

	logged.Reset()
	c.mu.Lock()
	c.validUntil = time.Now().Add(time.Second) // the renewal landed
	c.mu.Unlock()
	w.responderDone()
	w.sync(sel, campaigns, gone)
	if en, ok := w.entry("198.18.0.1"); !ok || en.Withdrawn {
		t.Fatalf("entry %+v (in the table: %v) once renewed, want announced", en, ok)
	}
	if strings.Contains(logged.String(), "ran out") {
		t.Errorf("warned again once renewed: %q", logged.String())
	}
}
