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

	"github.com/heraldlb/herald/cells/allocator"
	"github.com/heraldlb/herald/cells/bgpdesired"
	"github.com/heraldlb/herald/cells/bgpspeaker"
	"github.com/heraldlb/herald/cells/bgpstatus"
	"github.com/heraldlb/herald/cells/dbgapi"
	"github.com/heraldlb/herald/cells/devices"
	"github.com/heraldlb/herald/cells/election"
	"github.com/heraldlb/herald/cells/health"
	"github.com/heraldlb/herald/cells/k8sclient"
	"github.com/heraldlb/herald/cells/k8swatch"
	"github.com/heraldlb/herald/cells/l2candidates"
	"github.com/heraldlb/herald/cells/l2elector"
	"github.com/heraldlb/herald/cells/l2podannounce"
	"github.com/heraldlb/herald/cells/l2policystatus"
	"github.com/heraldlb/herald/cells/l2responder"
	"github.com/heraldlb/herald/cells/metrics"
	"github.com/heraldlb/herald/cells/nodeipam"
	"github.com/heraldlb/herald/cells/noderoutes"
	"github.com/heraldlb/herald/cells/podcidr"
	"github.com/heraldlb/herald/cells/poolstatus"
	"github.com/heraldlb/herald/cells/servicestatus"
	"github.com/heraldlb/herald/daemon/agentconfig"
)

// Cells of the agent, in the order data flows through them.
var Cells = []cell.Cell{
	// Infrastructure: module health and probes, jobs, the in-memory
	// database, Prometheus metrics.
	health.Cell,
	job.Cell,
	statedb.Cell,
	metrics.Cell,

	// Agent-wide settings: node name, namespace, IP families, features.
	agentconfig.Cell,
	// Kubernetes clients and the Event recorder.
	k8sclient.Cell,
	// Kubernetes → tables services, lb-pools, l2-policies, nodes.
	k8swatch.Cell,
	// Lease elections of the cluster-wide singletons → table leadership;
	// the fence every leader-only writer checks.
	election.Cell,
	// LB IPAM (leader only): services × lb-pools → lb-allocations, lb-pool-status.
	allocator.Cell,
	// lb-allocations → Service status (ingress IPs, condition) and Events.
	servicestatus.Cell,
	// lb-pool-status → pool status conditions and Events.
	poolstatus.Cell,
	// Multi-pool pod IPAM (ipam: multi-pool). The allocator (leader only):
	// pod-ip-pools × cilium-nodes × nodes → CiliumNodes' CIDRs, pool status.
	podcidr.Cell,
	// Every node: its CIDRs → addresses for the herald-ipam CNI plugin,
	// the journal, its CiliumNode's requests and releases.
	nodeipam.Cell,
	// cilium-nodes × nodes → routes to the other nodes' pod CIDRs.
	noderoutes.Cell,
	// netlink → table devices (only with L2 announcements or L2 pod
	// announcements on).
	devices.Cell,
	// services × l2-policies × nodes × devices × l2-members → l2-candidates;
	// Events for Services nobody may announce.
	l2candidates.Cell,
	// l2-announce → eBPF ARP responder on selected devices, gratuitous ARP.
	// Before the elector: cells stop in reverse order, so the responder
	// still runs when the stopping elector withdraws every entry, and the
	// node leaves the members as soon as it is silent.
	l2responder.Cell,
	// l2-candidates × members (peer liveness) × Leases → table l2-announce
	// and the fence deadline (l2-lease-health); the announcement Leases.
	l2elector.Cell,
	// l2-policies → policy status conditions.
	l2policystatus.Cell,
	// pod-ip-allocations × devices → gratuitous ARP for new pod addresses
	// (L2 pod announcements).
	l2podannounce.Cell,
	// BGP control plane: BGP resources × nodes × services × endpoint-slices ×
	// pod CIDRs → bgp-instances, bgp-routes.
	bgpdesired.Cell,
	// bgp-instances × bgp-routes → GoBGP (sessions, RIB, export policy);
	// sessions → bgp-peers.
	bgpspeaker.Cell,
	// bgp-instances × bgp-peers → CiliumBGPNodeConfig; problems of the BGP
	// resources → their status conditions.
	bgpstatus.Cell,
	// Tables and configuration → herald-dbg over a unix socket.
	dbgapi.Cell,

	// Readiness: /healthz answers OK once everything above has started.
	health.Started,
}

// New returns the agent's hive.
func New(extra ...cell.Cell) *hive.Hive {
	return hive.NewWithOptions(hive.Options{
		EnvPrefix: "HERALD_",
		// Without timeouts every stop hook is skipped: Leases would not be
		// released and queued Events would be lost.
		StartTimeout: 5 * time.Minute,
		StopTimeout:  time.Minute,
		ModuleDecorators: cell.ModuleDecorators{
			func(h cell.Health, id cell.ModuleID) cell.Health { return h.NewScope(string(id)) },
		},
		ModulePrivateProviders: cell.ModulePrivateProviders{
			func(r job.Registry, h cell.Health, l *slog.Logger) job.Group {
				return r.NewGroup(h, job.WithLogger(l))
			},
		},
	}, append(Cells, extra...)...)
}
