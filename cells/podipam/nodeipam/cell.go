// Package nodeipam is multi-pool IPAM on each node: it hands pod addresses
// out of the node's CIDRs to the herald-ipam CNI plugin, journals every
// allocation on the host, asks the pod CIDR allocator for as many addresses
// as the node needs (spec.ipam.pools.requested of its CiliumNode), gives
// back CIDRs it no longer needs, and collects the addresses of pods that
// are gone.
//
// Reads: tables cilium-nodes (its own), pods (this node's), namespaces,
// pod-ip-pools, nodes (its own, for the owner reference).
// Writes: tables node-pod-cidrs, pod-ip-allocations and ciliumnode-writes
// (what its CiliumNode should say, written by a reconciler); its CiliumNode
// (requested, released CIDRs, status.ipam.used); the journal under
// --ipam-state-dir; serves --ipam-socket; Events on Pods.
package nodeipam

import (
	"fmt"
	"strings"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// Config of the node's pod IPAM.
type Config struct {
	// IPAMMultiPoolPreAllocation is how many addresses of each pool the
	// node keeps ready beyond what is in use ("default=8").
	IPAMMultiPoolPreAllocation string // ipam-multi-pool-pre-allocation
	// IPAMDefaultIPPool is the pool of pods whose annotations and
	// namespace name none (Cilium's option, "default" unless set).
	IPAMDefaultIPPool string // ipam-default-ip-pool
	IPAMSocket        string // ipam-socket
	IPAMStateDir      string // ipam-state-dir
	// IPAMGCGrace is how long the address of a pod that seems gone waits
	// before the API server is asked, and again before it is released.
	IPAMGCGrace time.Duration // ipam-gc-grace (hidden)
	// Procfs is where the host's /proc is: the agent turns IP forwarding on
	// under <procfs>/sys/net. A container's own /proc/sys is read-only, so
	// the DaemonSet mounts the host's /proc/sys/net at /host/proc/sys/net.
	Procfs string // procfs
}

var defaultConfig = Config{
	IPAMMultiPoolPreAllocation: tables.DefaultPodIPPool + "=8",
	IPAMDefaultIPPool:          tables.DefaultPodIPPool,
	IPAMSocket:                 ipamv1.DefaultSocket,
	IPAMStateDir:               ipamv1.DefaultStateDir,
	IPAMGCGrace:                gcGrace,
	Procfs:                     "/proc",
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("ipam-multi-pool-pre-allocation", def.IPAMMultiPoolPreAllocation,
		"Addresses of each pool to keep ready on the node, as <pool>=<count>[,<pool>=<count>...] or a JSON object {\"<pool>\": \"<count>\"}; pools without an entry get exactly what is in use and pending")
	flags.String("ipam-default-ip-pool", def.IPAMDefaultIPPool,
		"The CiliumPodIPPool of pods whose annotations and namespace name none")
	flags.String("ipam-socket", def.IPAMSocket, "Unix socket the herald-ipam CNI plugin talks to")
	flags.String("ipam-state-dir", def.IPAMStateDir, "Host directory of the allocation journal and of the DELs the plugin queued while the agent was down")
	flags.Duration("ipam-gc-grace", def.IPAMGCGrace,
		"How long the address of a pod that seems gone (not in the agent's view of the node's pods, or another pod of that name there) waits before the API server is asked, and again before it is released; the runtime's DEL and CNI GC normally release addresses first")
	flags.String("procfs", def.Procfs, "Where the host's proc filesystem is mounted: the agent turns IP forwarding on under <procfs>/sys/net when the node's first pod gets an address (multi-pool IPAM)")
	// Hidden: the default suits every cluster; shorter only for tests and
	// for nodes whose runtime is known to lose DELs.
	_ = flags.MarkHidden("ipam-gc-grace")
}

// defaultPool checks ipam-default-ip-pool: a pool's name, or the agent does
// not start.
func (c Config) defaultPool() (string, error) {
	if errs := validation.IsDNS1123Subdomain(c.IPAMDefaultIPPool); len(errs) > 0 {
		return "", fmt.Errorf("ipam-default-ip-pool: %q cannot be the name of a CiliumPodIPPool: %s", c.IPAMDefaultIPPool, strings.Join(errs, "; "))
	}
	return c.IPAMDefaultIPPool, nil
}

var Cell = cell.Module(
	"node-ipam",
	"Pod addresses for the herald-ipam CNI plugin",

	cell.Provide(reflections),
	cell.Config(defaultConfig),
	cell.ProvidePrivate(tables.NewNodePodCIDRsTable, tables.NewPodIPAllocationsTable, newNodeWritesTable),
	cell.Provide(
		statedb.RWTable[*tables.NodePodCIDR].ToTable,
		statedb.RWTable[*tables.PodIPAllocation].ToTable,
	),
	cell.Invoke(register),
)

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections(agent agentconfig.Config) tables.Reflections {
	if !agent.MultiPool() {
		return tables.Reflections{}
	}
	return tables.Reflect(tables.PodIPPoolsTableName, tables.CiliumNodesTableName, tables.NodesTableName, tables.PodsTableName, tables.NamespacesTableName)
}
