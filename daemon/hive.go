// Package daemon assembles the agent: the list of cells below is the map of
// the program. Cells never call each other; they meet in statedb tables.
package daemon

import (
	"log/slog"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/bgp"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/ground/binarypages"
	"github.com/heraldlb/herald/cells/ground/dbgshell"
	"github.com/heraldlb/herald/cells/ground/devices"
	"github.com/heraldlb/herald/cells/ground/election"
	"github.com/heraldlb/herald/cells/ground/health"
	"github.com/heraldlb/herald/cells/ground/k8sclient"
	"github.com/heraldlb/herald/cells/ground/k8swatch"
	"github.com/heraldlb/herald/cells/ground/metrics"
	"github.com/heraldlb/herald/cells/ground/pprof"
	"github.com/heraldlb/herald/cells/l2"
	"github.com/heraldlb/herald/cells/lbipam"
	"github.com/heraldlb/herald/cells/podipam"
)

// Cells of the agent: the ground floor every feature stands on, then the
// four features, each a group of cells in its own folder under cells/.
var Cells = []cell.Cell{
	// The ground floor. Infrastructure: module health and probes, jobs,
	// the in-memory database, Prometheus metrics.
	health.Cell,
	job.Cell,
	statedb.Cell,
	metrics.Cell,
	// Go runtime profiles (--pprof).
	pprof.Cell,
	// Agent-wide settings: node name, namespace, IP families, features.
	agentconfig.Cell,
	// Kubernetes clients and the Event recorder.
	k8sclient.Cell,
	// Kubernetes → tables services, lb-pools, l2-policies, nodes, ...
	k8swatch.Cell,
	// Lease elections of the cluster-wide singletons → table leadership;
	// the fence every leader-only writer checks.
	election.Cell,
	// netlink → table devices (only with L2 announcements or L2 pod
	// announcements on).
	devices.Cell,
	// Every table and the configuration → herald-dbg (hive's shell, unix socket).
	dbgshell.Cell,

	// The features.
	// LB IPAM: LoadBalancer IPs from the pools into the Services' status.
	lbipam.Cell,
	// Multi-pool pod IPAM (ipam: multi-pool): pod CIDRs per node, addresses
	// for herald-ipam.
	podipam.Cell,
	// L2 announcements: one node answers ARP/NDP for each IP.
	l2.Cell,
	// The BGP control plane.
	bgp.Cell,

	// Once everything above has started: the pages of the binary that
	// only the start needed go back to the kernel.
	binarypages.Cell,

	// Readiness: /healthz answers OK once everything above has started.
	health.Started,
}

// EnvPrefix starts the environment variable of each option:
// HERALD_ENABLE_IPV6 for enable-ipv6.
const EnvPrefix = "HERALD_"

// New returns the agent's hive.
func New(extra ...cell.Cell) *hive.Hive {
	return hive.NewWithOptions(hiveOptions(EnvPrefix, 5*time.Minute, time.Minute), append(Cells, extra...)...)
}

// hiveOptions are the options of both of Herald's hives (the agent's and
// the control-plane VIP mode's): each module gets its own health scope
// and job group.
func hiveOptions(envPrefix string, start, stop time.Duration) hive.Options {
	return hive.Options{
		EnvPrefix: envPrefix,
		// Without timeouts every stop hook is skipped: Leases would not be
		// released and queued Events would be lost.
		StartTimeout: start,
		StopTimeout:  stop,
		ModuleDecorators: cell.ModuleDecorators{
			func(h cell.Health, id cell.ModuleID) cell.Health { return h.NewScope(string(id)) },
		},
		ModulePrivateProviders: cell.ModulePrivateProviders{
			func(r job.Registry, h cell.Health, l *slog.Logger) job.Group {
				return r.NewGroup(h, job.WithLogger(l))
			},
		},
	}
}
