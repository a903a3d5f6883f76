package metrics

import (
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heraldlb/herald/cells/internal/httpserve"
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
	httpserve.Serve(lc, log, httpserve.Endpoint{
		Addr: cfg.PrometheusServeAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		Flag: "prometheus-serve-addr", Stopped: "Metrics endpoint stopped",
	})
}
