package readiness

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A readyz-url with a wrong host or port gets no answer, exactly as a
// local API server that is still starting: silent during the grace (a
// cold start is no mistake), then one warning line that names the URL,
// and again once for the next stretch after an answer.
func TestUnansweredLogged(t *testing.T) {
	closed := closedPort(t)
	var logs bytes.Buffer
	pr := newTestProber(t, "https://"+closed+"/readyz", slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})), "")
	probe := func(n int) {
		for range n {
			ok, outcome := pr.probe(context.Background())
			pr.record(ok, outcome, nopHealth{})
		}
	}
	probe(3)
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("no answer during the grace is logged as a warning:\n%s", logs.String())
	}
	pr.unansweredSince = pr.unansweredSince.Add(-unansweredGrace - time.Second)
	probe(3)
	out := logs.String()
	if strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, "has not answered the readiness probe") || !strings.Contains(out, closed) {
		t.Fatalf("a lasting silence must be logged once, with the URL:\n%s", out)
	}
	if v := testutil.ToFloat64(pr.probes.WithLabelValues("error")); v != 6 {
		t.Fatalf(`herald_control_plane_readyz_probes_total{result="error"} = %v, want 6`, v)
	}

	// An answer ends the stretch; the next one is said again.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	pr.Config.ReadyzURL = srv.URL + "/readyz"
	probe(1)
	if !pr.unansweredSince.IsZero() {
		t.Fatal("an answer did not end the stretch of silence")
	}
	pr.Config.ReadyzURL = "https://" + closed + "/readyz"
	probe(1)
	pr.unansweredSince = pr.unansweredSince.Add(-unansweredGrace - time.Second)
	probe(1)
	if n := strings.Count(logs.String(), "has not answered the readiness probe"); n != 2 {
		t.Fatalf("want the second stretch logged too, got %d lines:\n%s", n, logs.String())
	}
}

// A host name that does not resolve is a wrong readyz-url at once: it
// does not start resolving when the API server starts.
func TestUnresolvedHostIsWrongURL(t *testing.T) {
	err := &url.Error{Op: "Get", URL: "https://cp-1.example:6443/readyz",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "cp-1.example", IsNotFound: true}}}
	if got := errorHint(err); got != wrongURLHint {
		t.Fatalf("errorHint(%v) = %q, want the wrong-URL hint", err, got)
	}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/readyz",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "server misbehaving", Name: "cp-1.example", IsTemporary: true}}}
	if got := errorHint(refused); got != "" {
		t.Fatalf("a temporary resolver failure is hinted as a wrong URL: %q", got)
	}
}

// closedPort: a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
