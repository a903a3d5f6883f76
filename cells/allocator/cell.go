// Package allocator is LB IPAM: it gives Services of type LoadBalancer IPs
// from CiliumLoadBalancerIPPools and computes each pool's status.
//
// Reads: tables services and lb-pools.
// Writes: tables lb-allocations (one decision per Service) and
// lb-pool-status; the service-status and pool-status cells write them to
// the API server.
//
// Only one agent allocates at a time: the holder of the Lease
// herald-lb-ipam in --k8s-namespace. The others keep both tables empty.
package allocator

import (
	"fmt"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/tables"
)

// LeaseName is the Lease the LB IPAM leader holds.
const LeaseName = "herald-lb-ipam"

// Config of LB IPAM.
type Config struct {
	// DefaultLBServiceIPAM is "lbipam" (Services without a
	// loadBalancerClass get IPs) or "none" (they do not, unless they opt in).
	DefaultLBServiceIPAM string // default-lb-service-ipam
}

var defaultConfig = Config{DefaultLBServiceIPAM: "lbipam"}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("default-lb-service-ipam", def.DefaultLBServiceIPAM,
		`Which IPAM handles LoadBalancer Services without a loadBalancerClass: "lbipam" or "none"`)
}

func (c Config) validate() error {
	switch c.DefaultLBServiceIPAM {
	case "lbipam", "none":
		return nil
	}
	return fmt.Errorf(`default-lb-service-ipam: %q is not "lbipam" or "none"`, c.DefaultLBServiceIPAM)
}

// Cell is LB IPAM as the agent runs it: allocating while holding the Lease.
var Cell = module(newLeaseLeadership)

// module assembles the cell around a way of knowing when this agent leads;
// tests substitute one that always does.
func module(newLeadership any) cell.Cell {
	return cell.Module(
		"lb-ipam",
		"LoadBalancer IP allocation",

		cell.Config(defaultConfig),
		cell.ProvidePrivate(newLeadership),
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
}
