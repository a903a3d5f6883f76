// Package allocator is LB IPAM: it gives Services of type LoadBalancer IPs
// from CiliumLoadBalancerIPPools and computes each pool's status.
//
// Reads: tables services, lb-pools and leadership; under multi-pool IPAM,
// pod-ip-pools (an LB pool overlapping an older CiliumPodIPPool is
// conflicting).
// Writes: tables lb-allocations (one decision per Service) and
// lb-pool-status; the service-status and pool-status cells write them to
// the API server, fenced by the term they were decided in.
//
// Only one agent allocates at a time: the holder of the Lease
// herald-lb-ipam in --k8s-namespace (campaigned for by the election cell).
// Each term starts from a fresh engine, built after the tables have caught
// up with the API server; when the term ends both tables are emptied.
package allocator

import (
	"fmt"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// Config of LB IPAM.
type Config struct {
	// DefaultLBServiceIPAM is "lbipam" (Services without a
	// loadBalancerClass get IPs) or "none" (they do not, unless they opt in).
	DefaultLBServiceIPAM string // default-lb-service-ipam

	// Timings of the herald-lb-ipam Lease. A crashed allocator is replaced
	// after about LeaseDuration; see Documentation/lb-ipam.md.
	LBIPAMLeaseDuration      time.Duration // lb-ipam-lease-duration
	LBIPAMLeaseRenewDeadline time.Duration // lb-ipam-lease-renew-deadline
	LBIPAMLeaseRetryPeriod   time.Duration // lb-ipam-lease-retry-period
}

var defaultConfig = Config{
	DefaultLBServiceIPAM:     "lbipam",
	LBIPAMLeaseDuration:      2 * time.Second,
	LBIPAMLeaseRenewDeadline: time.Second,
	LBIPAMLeaseRetryPeriod:   250 * time.Millisecond,
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("default-lb-service-ipam", def.DefaultLBServiceIPAM,
		`Which IPAM handles LoadBalancer Services without a loadBalancerClass: "lbipam" or "none"`)
	flags.Duration("lb-ipam-lease-duration", def.LBIPAMLeaseDuration,
		"How long the other agents wait after the LB IPAM leader's last renewal before one of them takes over (whole seconds)")
	flags.Duration("lb-ipam-lease-renew-deadline", def.LBIPAMLeaseRenewDeadline,
		"How long after sending its last successful renewal the LB IPAM leader still writes; shorter than the lease duration")
	flags.Duration("lb-ipam-lease-retry-period", def.LBIPAMLeaseRetryPeriod,
		"How often the LB IPAM leader renews its Lease")
}

func (c Config) validate() error {
	switch c.DefaultLBServiceIPAM {
	case "lbipam", "none":
	case "nodeipam":
		// Cilium's third value: its node IPAM gives class-less Services
		// the addresses of nodes. Herald has none; say so rather than
		// "not a value".
		return fmt.Errorf(`default-lb-service-ipam: "nodeipam" is Cilium's node IPAM (Services get node addresses), which Herald does not have: use "lbipam", or "none" to leave Services without a loadBalancerClass to another controller`)
	default:
		return fmt.Errorf(`default-lb-service-ipam: %q is not "lbipam" or "none"`, c.DefaultLBServiceIPAM)
	}
	if err := c.timings().Validate(); err != nil {
		return fmt.Errorf("lb-ipam-lease-*: %w", err)
	}
	return nil
}

func (c Config) timings() tables.LeaseTimings {
	return tables.LeaseTimings{
		Duration:      c.LBIPAMLeaseDuration,
		RenewDeadline: c.LBIPAMLeaseRenewDeadline,
		RetryPeriod:   c.LBIPAMLeaseRetryPeriod,
	}
}

type electionOut struct {
	cell.Out
	Election tables.Election `group:"elections"`
}

// election asks the election cell to campaign for the LB IPAM Lease. It
// checks the options first: the election cell runs before the allocator's
// own check, and its error would name the Lease, not the options to fix.
func election(c Config) (electionOut, error) {
	if err := c.validate(); err != nil {
		return electionOut{}, err
	}
	return electionOut{Election: tables.Election{Lease: tables.LBIPAMLease, Timings: c.timings()}}, nil
}

// Cell is LB IPAM.
var Cell = cell.Module(
	"lb-ipam",
	"LoadBalancer IP allocation",

	cell.Provide(reflections),
	cell.Config(defaultConfig),
	cell.Provide(election),
	// The status reconcilers write the reconciliation status back, hence
	// read-write tables.
	cell.Provide(
		tables.NewLBAllocationsTable,
		tables.NewLBPoolStatusTable,
		statedb.RWTable[*tables.LBAllocation].ToTable,
		statedb.RWTable[*tables.LBPoolStatus].ToTable,
	),
	cell.Invoke(registerAllocator),
)

// reflections asks the ground floor for the Kubernetes objects this cell
// reads: under multi-pool IPAM the CiliumPodIPPools too, whose addresses
// go to pods (podpools.go).
func reflections(agent agentconfig.Config) tables.Reflections {
	if agent.MultiPool() {
		return tables.Reflect(tables.ServicesTableName, tables.LBPoolsTableName, tables.PodIPPoolsTableName)
	}
	return tables.Reflect(tables.ServicesTableName, tables.LBPoolsTableName)
}
