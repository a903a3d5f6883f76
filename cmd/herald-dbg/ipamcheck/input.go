// Package ipamcheck is the logic of `herald-dbg ipam check` and `herald-dbg
// ipam release`: from what one node's agent holds and what the API server
// says, it finds leaked addresses, addresses and CIDRs held twice, and CIDRs
// in the wrong place, and decides what a release sends or writes. No I/O:
// the command reads its inputs and carries out the plans.
package ipamcheck

import (
	"fmt"
	"net/netip"
	"sort"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/tables"
)

// Input is everything a check looks at.
type Input struct {
	// Node is the node the command runs on: its agent's node name.
	Node string
	// Allocations and CIDRs are the agent's tables pod-ip-allocations
	// (every journaled address, also those outside the node's CIDRs) and
	// node-pod-cidrs.
	Allocations []*tables.PodIPAllocation
	CIDRs       []*tables.NodePodCIDR
	// Pods are the Pods of this node, and any other Pod an allocation
	// names (same namespace and name, found elsewhere or recreated).
	Pods []Pod
	// CiliumNodes are all of them, as the API server has them.
	CiliumNodes []*CiliumNode
	// Pools are the CiliumPodIPPools.
	Pools []*tables.PodIPPool
}

// Pod is what a check needs of a Pod.
type Pod struct {
	Namespace string
	Name      string
	UID       string
	NodeName  string
}

// Key is "namespace/name".
func (p Pod) Key() string { return p.Namespace + "/" + p.Name }

// CiliumNode is the pod IPAM part of a CiliumNode: the CIDRs it lists and
// the addresses its agent reports in use.
type CiliumNode struct {
	Name      string
	Allocated []tables.PoolCIDRs
	// BadCIDRs are entries of spec.ipam.pools.allocated that do not parse.
	BadCIDRs []BadCIDR
	// Used is status.ipam.used: address -> owner ("namespace/pod") and pool.
	Used map[netip.Addr]Use
}

// BadCIDR is an entry of spec.ipam.pools.allocated that is not a CIDR.
type BadCIDR struct {
	Pool  string
	Value string
	Err   string
}

// Use is one entry of status.ipam.used.
type Use struct {
	Owner string // namespace/pod
	Pool  string
}

// CiliumNodeFromK8s converts a CiliumNode. Entries of status.ipam.used
// whose key is not an address are skipped: the agent writes only
// addresses, and a check cannot place anything else.
func CiliumNodeFromK8s(n *v2.CiliumNode) *CiliumNode {
	out := &CiliumNode{Name: n.Name, Used: map[netip.Addr]Use{}}
	for _, a := range n.Spec.IPAM.Pools.Allocated {
		pc := tables.PoolCIDRs{Pool: a.Pool}
		for _, c := range a.CIDRs {
			p, err := netip.ParsePrefix(string(c))
			if err != nil {
				out.BadCIDRs = append(out.BadCIDRs, BadCIDR{Pool: a.Pool, Value: string(c), Err: err.Error()})
				continue
			}
			pc.CIDRs = append(pc.CIDRs, p.Masked())
		}
		out.Allocated = append(out.Allocated, pc)
	}
	for ip, u := range n.Status.IPAM.Used {
		if a, err := netip.ParseAddr(ip); err == nil {
			out.Used[a.Unmap()] = Use{Owner: u.Owner, Pool: u.Resource}
		}
	}
	return out
}

// holdings returns every CIDR the node lists, with its pool.
func (n *CiliumNode) holdings() []holding {
	var out []holding
	for _, a := range n.Allocated {
		for _, c := range a.CIDRs {
			out = append(out, holding{node: n.Name, pool: a.Pool, prefix: c})
		}
	}
	return out
}

// lists reports whether the node lists p (under any pool).
func (n *CiliumNode) lists(p netip.Prefix) bool {
	for _, a := range n.Allocated {
		for _, c := range a.CIDRs {
			if c == p {
				return true
			}
		}
	}
	return false
}

// usedIn returns the addresses the node reports in use inside p, sorted.
func (n *CiliumNode) usedIn(p netip.Prefix) []netip.Addr {
	var out []netip.Addr
	for a := range n.Used {
		if p.Contains(a) {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

type holding struct {
	node, pool string
	prefix     netip.Prefix
}

func (h holding) String() string {
	return fmt.Sprintf("%s (pool %q, node %s)", h.prefix, h.pool, h.node)
}
