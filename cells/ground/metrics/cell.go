// Package metrics provides the Prometheus registry every cell registers its
// metrics with, and serves it on --prometheus-serve-addr. It also turns the
// statedb reconcilers' reports into metrics (reconcile errors, durations).
//
// Reads: nothing; cells push or register collectors.
// Writes: nothing; serves /metrics.
package metrics

import (
	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"
)

// Config of the metrics endpoint.
type Config struct {
	PrometheusServeAddr string // prometheus-serve-addr
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("prometheus-serve-addr", def.PrometheusServeAddr, "Address serving Prometheus metrics at /metrics, e.g. :9966; empty disables it")
}

var Cell = cell.Module(
	"metrics",
	"Prometheus metrics",

	cell.Config(Config{}),
	cell.Provide(newRegistry, newReconcilerMetrics),
	cell.Invoke(serve),
)
