package readiness

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A starting kube-apiserver answers /readyz with 403 until its roles are
// in place (anonymous users may read /readyz only then): on every cold
// start. That is no wrong readyz-url, and must not be logged as one; a
// 403 that lasts past the grace is (anonymous-auth allowed but /readyz
// not readable, or another URL).
func TestForbiddenWhileStarting(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer srv.Close()
	var logs bytes.Buffer
	pr := newTestProber(t, srv.URL+"/readyz", slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})), "")
	for range 5 {
		ok, outcome := pr.probe(context.Background())
		pr.record(ok, outcome, nopHealth{})
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("a 403 as a starting API server answers is logged as a wrong URL:\n%s", logs.String())
	}
	if v := testutil.ToFloat64(pr.probes.WithLabelValues("not-ready")); v != 5 {
		t.Fatalf(`herald_control_plane_readyz_probes_total{result="not-ready"} = %v during the grace, want 5`, v)
	}
	// The 403s began longer ago than the grace.
	pr.forbiddenSince = pr.forbiddenSince.Add(-forbiddenGrace - time.Second)
	for range 5 {
		ok, outcome := pr.probe(context.Background())
		pr.record(ok, outcome, nopHealth{})
	}
	out := logs.String()
	if strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, "answered 403 Forbidden"+wrongURLHint) {
		t.Fatalf("a lasting 403 must be logged once as a wrong URL:\n%s", out)
	}
	if v := testutil.ToFloat64(pr.probes.WithLabelValues("error")); v != 5 {
		t.Fatalf(`herald_control_plane_readyz_probes_total{result="error"} = %v after the grace, want 5`, v)
	}
}
