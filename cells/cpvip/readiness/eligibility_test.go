package readiness

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heraldlb/herald/tables"
)

// Every change of eligibility is logged once at the default level, after
// the thresholds and not at each probe, and is published in the
// readiness table and the ready gauge: ready, not ready, ready again.
func TestEligibilityChangesLogged(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(int(status.Load())) }))
	defer srv.Close()
	var logs bytes.Buffer
	pr := newTestProber(t, srv.URL+"/readyz", slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})), "")
	probe := func(n int) {
		for range n {
			ok, outcome := pr.probe(context.Background())
			pr.record(ok, outcome, nopHealth{})
		}
	}
	eligible := func() bool {
		row, _, _ := pr.Readiness.Get(pr.DB.ReadTxn(), tables.ControlPlaneReadinessNodeIndex.Query("cp1"))
		return row.Eligible
	}
	const ready, notReady = "Local API server ready: this node may own the VIPs", "Local API server not ready: this node gives the VIPs up"

	probe(pr.Config.ReadyzSuccessThreshold - 1)
	if eligible() || strings.Contains(logs.String(), ready) {
		t.Fatalf("eligible before %d successes:\n%s", pr.Config.ReadyzSuccessThreshold, logs.String())
	}
	probe(1 + 3) // the threshold, then more of the same: one line
	if !eligible() || strings.Count(logs.String(), ready) != 1 || testutil.ToFloat64(pr.ready) != 1 {
		t.Fatalf("want eligible, logged once, gauge 1; eligible %v, gauge %v:\n%s", eligible(), testutil.ToFloat64(pr.ready), logs.String())
	}

	status.Store(http.StatusServiceUnavailable)
	probe(pr.Config.ReadyzFailureThreshold - 1)
	if !eligible() || strings.Contains(logs.String(), notReady) {
		t.Fatalf("not eligible before %d failures:\n%s", pr.Config.ReadyzFailureThreshold, logs.String())
	}
	probe(1 + 3)
	out := logs.String()
	if eligible() || strings.Count(out, notReady) != 1 || !strings.Contains(out, "answered 503 Service Unavailable") || testutil.ToFloat64(pr.ready) != 0 {
		t.Fatalf("want not eligible, logged once with the answer, gauge 0; eligible %v:\n%s", eligible(), out)
	}

	status.Store(http.StatusOK)
	probe(pr.Config.ReadyzSuccessThreshold)
	if !eligible() || strings.Count(logs.String(), ready) != 2 {
		t.Fatalf("ready again must be logged again:\n%s", logs.String())
	}
}
