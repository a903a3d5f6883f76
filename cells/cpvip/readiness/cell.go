// Package readiness judges whether this control-plane node may own the
// API-server VIPs: it asks the local kube-apiserver's /readyz every
// readyz-period and applies the thresholds (judge).
//
// Reads: the local kube-apiserver's readyz-url.
// Writes: table control-plane-readiness (this node's row); the metrics
// herald_control_plane_readyz_probes_total and
// herald_control_plane_api_server_ready.
package readiness

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"control-plane-readiness",
	"Judges the readiness of the local API server",

	cell.ProvidePrivate(tables.NewControlPlaneReadinessTable),
	cell.Provide(statedb.RWTable[*tables.ControlPlaneReadiness].ToTable),
	cell.Invoke(registerProber),
)
