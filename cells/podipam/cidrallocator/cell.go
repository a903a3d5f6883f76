// Package cidrallocator is multi-pool IPAM's allocator: it hands every node pod
// CIDRs out of CiliumPodIPPools, as many as the node's agent asks for in
// its CiliumNode, and computes each pool's status.
//
// Reads: tables pod-ip-pools, cilium-nodes, nodes, lb-pools (a pod pool
// overlapping an older CiliumLoadBalancerIPPool is conflicting) and
// leadership.
// Writes: tables pod-cidr-decisions and pod-ip-pool-status, and through
// their reconcilers CiliumNodes (spec.ipam.pools.allocated, status.ipam.
// operator-status.error, deletion of those whose Node is gone) and pool
// status and finalizers; Events on CiliumNodes and pools. Every write is
// fenced by the term it was decided in and conditional on the object's
// resourceVersion.
//
// Only the holder of the Lease herald-pod-ipam allocates; each term starts
// from a fresh engine, after the tables caught up with the API server.
package cidrallocator

import (
	"fmt"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// Config of the pod CIDR allocator.
type Config struct {
	// AutoCreateCiliumPodIPPools creates these pools when they do not exist
	// (the Cilium operator's option): pools separated by spaces, each
	// name=ipv4-cidrs:<cidr>,<cidr>;ipv4-mask-size:<n>;ipv6-cidrs:...;ipv6-mask-size:<n>.
	AutoCreateCiliumPodIPPools string // auto-create-cilium-pod-ip-pools

	PodIPAMLeaseDuration      time.Duration // pod-ipam-lease-duration
	PodIPAMLeaseRenewDeadline time.Duration // pod-ipam-lease-renew-deadline
	PodIPAMLeaseRetryPeriod   time.Duration // pod-ipam-lease-retry-period
}

var defaultConfig = Config{
	PodIPAMLeaseDuration:      2 * time.Second,
	PodIPAMLeaseRenewDeadline: time.Second,
	PodIPAMLeaseRetryPeriod:   250 * time.Millisecond,
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("auto-create-cilium-pod-ip-pools", def.AutoCreateCiliumPodIPPools,
		"CiliumPodIPPools to create at start if they do not exist, separated by spaces or commas, each <pool>=ipv4-cidrs:<cidr>[,<cidr>...];ipv4-mask-size:<n>[;ipv6-cidrs:...;ipv6-mask-size:<n>], or a JSON object {\"<pool>\": \"<spec>\"}")
	flags.Duration("pod-ipam-lease-duration", def.PodIPAMLeaseDuration,
		"How long the other agents wait after the pod CIDR allocator's last renewal of herald-pod-ipam before one takes over (whole seconds)")
	flags.Duration("pod-ipam-lease-renew-deadline", def.PodIPAMLeaseRenewDeadline,
		"How long after sending its last successful renewal the pod CIDR allocator still writes")
	flags.Duration("pod-ipam-lease-retry-period", def.PodIPAMLeaseRetryPeriod,
		"How often the pod CIDR allocator renews its Lease")
}

func (c Config) timings() tables.LeaseTimings {
	return tables.LeaseTimings{Duration: c.PodIPAMLeaseDuration, RenewDeadline: c.PodIPAMLeaseRenewDeadline, RetryPeriod: c.PodIPAMLeaseRetryPeriod}
}

func (c Config) validate() error {
	if err := c.timings().Validate(); err != nil {
		return fmt.Errorf("pod-ipam-lease-*: %w", err)
	}
	if _, err := parseAutoCreate(c.AutoCreateCiliumPodIPPools); err != nil {
		return fmt.Errorf("auto-create-cilium-pod-ip-pools: %w", err)
	}
	return nil
}

type electionOut struct {
	cell.Out
	Elections []tables.Election `group:"elections,flatten"`
}

// election campaigns for herald-pod-ipam, with multi-pool IPAM only. It
// checks the options first: the election cell runs before the allocator's
// own check, and its error would name the Lease, not the options to fix.
func election(c Config, agent agentconfig.Config) (electionOut, error) {
	if !agent.MultiPool() {
		return electionOut{}, nil
	}
	if err := c.validate(); err != nil {
		return electionOut{}, err
	}
	return electionOut{Elections: []tables.Election{{Lease: tables.PodIPAMLease, Timings: c.timings()}}}, nil
}

var Cell = cell.Module(
	"pod-cidr",
	"Pod CIDR allocation from CiliumPodIPPools",

	cell.Provide(reflections),
	cell.Config(defaultConfig),
	cell.Provide(election),
	cell.ProvidePrivate(tables.NewPodCIDRDecisionsTable, tables.NewPodIPPoolStatusTable),
	cell.Provide(
		statedb.RWTable[*tables.PodCIDRDecision].ToTable,
		statedb.RWTable[*tables.PodIPPoolStatus].ToTable,
	),
	cell.Invoke(registerAllocator, registerWriters),
)

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections(agent agentconfig.Config) tables.Reflections {
	if !agent.MultiPool() {
		return tables.Reflections{}
	}
	return tables.Reflect(tables.PodIPPoolsTableName, tables.CiliumNodesTableName, tables.NodesTableName, tables.LBPoolsTableName)
}
