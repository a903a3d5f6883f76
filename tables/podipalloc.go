package tables

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// NodePodCIDRsTableName is the table of this node's pod CIDRs, with how
// much of each is in use.
const NodePodCIDRsTableName = "node-pod-cidrs"

// NodePodCIDR is one of this node's pod CIDRs.
type NodePodCIDR struct {
	CIDR      netip.Prefix `json:"cidr"`
	Pool      string       `json:"pool"`
	InUse     int          `json:"inUse"`
	Usable    uint64       `json:"usable"`
	Releasing bool         `json:"releasing,omitempty"`
	// Gone: the CiliumNode no longer lists it, but pods still use it.
	Gone bool `json:"gone,omitempty"`
	// Draining: its pool no longer has it; nothing new comes from it and
	// it is released once its last address is.
	Draining bool `json:"draining,omitempty"`
}

func (c *NodePodCIDR) TableHeader() []string {
	return []string{"CIDR", "Pool", "InUse", "Usable", "State"}
}

func (c *NodePodCIDR) TableRow() []string {
	state := "allocated"
	switch {
	case c.Gone:
		state = "gone from the CiliumNode, in use"
	case c.Releasing:
		state = "releasing"
	case c.Draining:
		state = "draining (no longer in its pool)"
	}
	return []string{c.CIDR.String(), c.Pool, fmt.Sprint(c.InUse), fmt.Sprint(c.Usable), state}
}

// NodePodCIDRIndex is the primary index: the CIDR.
var NodePodCIDRIndex = statedb.Index[*NodePodCIDR, netip.Prefix]{
	Name: "cidr",
	FromObject: func(c *NodePodCIDR) index.KeySet {
		return index.NewKeySet(index.NetIPPrefix(c.CIDR))
	},
	FromKey:    index.NetIPPrefix,
	FromString: index.NetIPPrefixString,
	Unique:     true,
}

// NewNodePodCIDRsTable creates the node-pod-cidrs table.
func NewNodePodCIDRsTable(db *statedb.DB) (statedb.RWTable[*NodePodCIDR], error) {
	return statedb.NewTable(db, NodePodCIDRsTableName, NodePodCIDRIndex)
}

// PodIPAllocationsTableName is the table of the pod addresses this node
// handed out.
const PodIPAllocationsTableName = "pod-ip-allocations"

// PodIPAllocation is one address given to one container's interface.
type PodIPAllocation struct {
	IP          netip.Addr   `json:"ip"`
	CIDR        netip.Prefix `json:"cidr"`
	Pool        string       `json:"pool"`
	Network     string       `json:"network"`
	ContainerID string       `json:"containerID"`
	IfName      string       `json:"ifName"`
	PodNS       string       `json:"podNamespace"`
	PodName     string       `json:"podName"`
	PodUID      string       `json:"podUID,omitempty"`
	Since       time.Time    `json:"since"`
}

func (a *PodIPAllocation) TableHeader() []string {
	return []string{"IP", "Pool", "Pod", "Container", "Interface", "Since"}
}

func (a *PodIPAllocation) TableRow() []string {
	id := a.ContainerID
	if len(id) > 12 {
		id = id[:12]
	}
	return []string{a.IP.String(), a.Pool, a.PodNS + "/" + a.PodName, id, a.IfName, a.Since.UTC().Format(time.RFC3339)}
}

// PodIPAllocationIPIndex is the primary index: the address.
var PodIPAllocationIPIndex = statedb.Index[*PodIPAllocation, netip.Addr]{
	Name: "ip",
	FromObject: func(a *PodIPAllocation) index.KeySet {
		return index.NewKeySet(index.NetIPAddr(a.IP))
	},
	FromKey:    index.NetIPAddr,
	FromString: index.NetIPAddrString,
	Unique:     true,
}

// PodIPAllocationPodIndex finds a pod's addresses by "namespace/name".
var PodIPAllocationPodIndex = statedb.Index[*PodIPAllocation, string]{
	Name: "pod",
	FromObject: func(a *PodIPAllocation) index.KeySet {
		return index.NewKeySet(index.String(a.PodNS + "/" + a.PodName))
	},
	FromKey:    index.String,
	FromString: index.FromString,
}

// NewPodIPAllocationsTable creates the pod-ip-allocations table.
func NewPodIPAllocationsTable(db *statedb.DB) (statedb.RWTable[*PodIPAllocation], error) {
	return statedb.NewTable(db, PodIPAllocationsTableName, PodIPAllocationIPIndex, PodIPAllocationPodIndex)
}
