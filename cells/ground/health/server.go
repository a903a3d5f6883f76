package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cilium/hive/cell"
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
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	lc.Append(cell.Hook{
		OnStart: func(cell.HookContext) error {
			l, err := net.Listen("tcp", cfg.HealthServeAddr)
			if err != nil {
				return fmt.Errorf("health-serve-addr %s: %w", cfg.HealthServeAddr, err)
			}
			go func() {
				if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("Health endpoint stopped", "error", err)
				}
			}()
			return nil
		},
	})
	lc.Append(cell.Hook{
		OnStop: func(ctx cell.HookContext) error { return srv.Shutdown(context.Context(ctx)) },
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
