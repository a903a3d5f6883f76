package health

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cilium/hive/cell"

	"github.com/heraldlb/herald/cells/internal/httpserve"
)

func serve(lc cell.Lifecycle, cfg Config, t *tree, log *slog.Logger) {
	if cfg.HealthServeAddr == "" {
		return
	}
	started := &t.started
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		lines, degraded := t.snapshot()
		switch {
		case !started.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "starting")
		case degraded:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	})
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	httpserve.Serve(lc, log, httpserve.Endpoint{
		Addr: cfg.HealthServeAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		Flag: "health-serve-addr", Stopped: "Health endpoint stopped",
	})
}

// Started marks the agent started once every start hook before it ran; put
// it last in the list of cells. Until then /healthz answers 503.
var Started = cell.Invoke(func(lc cell.Lifecycle, t *tree) {
	lc.Append(cell.Hook{OnStart: func(cell.HookContext) error {
		t.started.Store(true)
		return nil
	}})
})
