package readiness

import (
	"bytes"
	"context"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Wrong settings that no API server's restart mends must be said once
// in the log at the default level, and count as errors: a node that was
// never eligible has no change of eligibility to say them with.
func TestWrongEndpointLogged(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer plain.Close()
	// srv's certificate names 127.0.0.1 and example.com, not localhost.
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "https://"), ":")
	for _, tc := range []struct {
		name, url, ca, want string
	}{
		{"http:// to the API server's https port", "http://127.0.0.1:" + port + "/readyz", "", "answered 400 Bad Request: is readyz-url the API server's /readyz?"},
		{"https:// to a plain HTTP port", strings.Replace(plain.URL, "http://", "https://", 1) + "/readyz", "", "server gave HTTP response to HTTPS client: is readyz-url the API server's /readyz?"},
		{"a host the certificate does not name", "https://localhost:" + port + "/readyz", ca, "is readyz-url's host named by the API server's certificate, and readyz-ca-file its CA?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			pr := newTestProber(t, tc.url, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})), tc.ca)
			for range 5 {
				ok, outcome := pr.probe(context.Background())
				pr.record(ok, outcome, nopHealth{})
			}
			out := logs.String()
			if !strings.Contains(out, tc.want) || strings.Count(out, "level=WARN") != 1 {
				t.Fatalf("want one warning saying %q, got:\n%s", tc.want, out)
			}
			if v := testutil.ToFloat64(pr.probes.WithLabelValues("error")); v != 5 {
				t.Fatalf(`herald_control_plane_readyz_probes_total{result="error"} = %v, want 5`, v)
			}
		})
	}
}
