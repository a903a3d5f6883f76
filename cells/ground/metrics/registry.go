package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every Herald metric.
const Namespace = "herald"

type registryOut struct {
	cell.Out
	Registry   *prometheus.Registry
	Registerer prometheus.Registerer
}

func newRegistry() registryOut {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(),
	)
	return registryOut{Registry: reg, Registerer: reg}
}

// buildInfo is herald_build_info{version, go_version} 1.
func buildInfo() prometheus.Collector {
	version := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace:   Namespace,
		Name:        "build_info",
		Help:        "Build information of the running agent; always 1.",
		ConstLabels: prometheus.Labels{"version": version, "go_version": runtime.Version()},
	})
	g.Set(1)
	return g
}

func serve(lc cell.Lifecycle, cfg Config, reg *prometheus.Registry, log *slog.Logger) {
	if cfg.PrometheusServeAddr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	lc.Append(cell.Hook{
		OnStart: func(cell.HookContext) error {
			l, err := net.Listen("tcp", cfg.PrometheusServeAddr)
			if err != nil {
				return fmt.Errorf("prometheus-serve-addr %s: %w", cfg.PrometheusServeAddr, err)
			}
			go func() {
				if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("Metrics endpoint stopped", "error", err)
				}
			}()
			return nil
		},
		OnStop: func(ctx cell.HookContext) error { return srv.Shutdown(context.Context(ctx)) },
	})
}
