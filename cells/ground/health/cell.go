// Package health collects the health every module reports and serves it for
// Kubernetes probes: /healthz answers 200 while no module is degraded
// (readiness), /livez answers 200 while the agent runs (liveness), both
// with the list of modules and their state as text.
//
// Reads: the cell.Health reports of every module.
// Writes: nothing; serves --health-serve-addr.
package health

import (
	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"
)

// Config of the health endpoint.
type Config struct {
	HealthServeAddr string // health-serve-addr
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("health-serve-addr", def.HealthServeAddr, "Address serving /healthz (readiness) and /livez (liveness), e.g. :9965; empty disables it")
}

var Cell = cell.Module(
	"health",
	"Module health and probe endpoints",

	cell.Config(Config{}),
	cell.Provide(newRoot),
	cell.Invoke(serve),
)
