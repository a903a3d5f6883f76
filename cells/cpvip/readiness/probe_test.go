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

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
	"github.com/heraldlb/herald/tables"
)

// A wrong readyz-url on a node that never was eligible (the first node of
// a cold start) must be said in the log at the default level: no change
// of eligibility ever logs it there, and the election's state line then
// names no local reason.
func TestWrongURLLogged(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) }))
	defer srv.Close()
	var logs bytes.Buffer
	pr := newTestProber(t, srv.URL+"/readyzz", slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})), "")
	for range 5 {
		ok, outcome := pr.probe(context.Background())
		pr.record(ok, outcome, nopHealth{})
	}
	out := logs.String()
	if !strings.Contains(out, "answered 404 Not Found: is readyz-url the API server's /readyz?") {
		t.Fatalf("the log does not say what the URL answered:\n%s", out)
	}
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Fatalf("want the wrong URL logged once, got %d lines:\n%s", n, out)
	}
}

func newTestProber(t *testing.T, url string, log *slog.Logger, ca string) *prober {
	t.Helper()
	cfg := cpvipconfig.Defaults
	cfg.NodeName, cfg.ReadyzURL, cfg.ReadyzCAFile = "cp1", url, ca
	db := statedb.New()
	tbl, err := tables.NewControlPlaneReadinessTable(db)
	if err != nil {
		t.Fatal(err)
	}
	client, err := newClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pr := newProber(params{Config: cfg, Log: log, DB: db, Readiness: tbl}, client)
	wtxn := db.WriteTxn(tbl)
	_, _, _ = tbl.Insert(wtxn, &tables.ControlPlaneReadiness{Node: "cp1", Since: time.Now(), Reason: "not probed yet"})
	wtxn.Commit()
	return pr
}

type nopHealth struct{ cell.Health }

func (nopHealth) OK(string) {}
