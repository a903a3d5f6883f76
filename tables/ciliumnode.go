package tables

import (
	"fmt"
	"hash/fnv"
	"iter"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
)

// CiliumNodesTableName is the table of CiliumNodes (every node's).
const CiliumNodesTableName = "cilium-nodes"

// PoolDemand is how many addresses a node asks for from one pool
// (spec.ipam.pools.requested).
type PoolDemand struct {
	Pool string `json:"pool"`
	IPv4 int    `json:"ipv4"`
	IPv6 int    `json:"ipv6"`
}

// Of returns the demand for one family.
func (d PoolDemand) Of(f Family) int {
	if f == IPv4 {
		return d.IPv4
	}
	return d.IPv6
}

// PoolCIDRs are the CIDRs a node holds from one pool
// (spec.ipam.pools.allocated).
type PoolCIDRs struct {
	Pool  string         `json:"pool"`
	CIDRs []netip.Prefix `json:"cidrs"`
}

// PoolUsage is how many addresses of a pool a node's pods use, counted from
// status.ipam.used.
type PoolUsage struct {
	Pool string `json:"pool"`
	IPv4 int    `json:"ipv4"`
	IPv6 int    `json:"ipv6"`
}

// CiliumNode is the pod IPAM part of a CiliumNode.
type CiliumNode struct {
	Name              string    `json:"name"`
	UID               string    `json:"uid"`
	ResourceVersion   string    `json:"resourceVersion"`
	CreationTimestamp time.Time `json:"creationTimestamp"`
	// OwnerNodeUID is the UID of the Node that owns it (owner reference;
	// "" if none): where kube-controller-manager runs, it goes with that
	// Node.
	OwnerNodeUID string `json:"ownerNodeUID,omitempty"`

	Requested []PoolDemand `json:"requested,omitempty"`
	Allocated []PoolCIDRs  `json:"allocated,omitempty"`
	// AllocatedErrors lists allocated CIDRs that do not parse (edited by
	// hand); they are reported and never handed to anyone.
	AllocatedErrors []string    `json:"allocatedErrors,omitempty"`
	OperatorError   string      `json:"operatorError,omitempty"`
	Usage           []PoolUsage `json:"usage,omitempty"`
	// UsedDigest identifies the content of status.ipam.used (UsedDigest):
	// the node's agent compares it with what it would write, so that the
	// list also goes back to empty after a restart.
	UsedDigest uint64 `json:"usedDigest"`
}

// UsedDigest is a digest of a status.ipam.used map: equal maps, and only
// those (barring a 64-bit collision), have equal digests. The empty map
// and a missing one are the same.
func UsedDigest(used map[string]v2.AllocationIP) uint64 {
	h := fnv.New64a()
	for _, ip := range slices.Sorted(mapsKeys(used)) {
		u := used[ip]
		fmt.Fprintf(h, "%s\x00%s\x00%s\n", ip, u.Owner, u.Resource)
	}
	return h.Sum64()
}

// AllocatedIn returns the node's CIDRs of one pool.
func (n *CiliumNode) AllocatedIn(pool string) []netip.Prefix {
	for _, a := range n.Allocated {
		if a.Pool == pool {
			return a.CIDRs
		}
	}
	return nil
}

// Demand returns what the node asks of one pool.
func (n *CiliumNode) Demand(pool string) PoolDemand {
	for _, d := range n.Requested {
		if d.Pool == pool {
			return d
		}
	}
	return PoolDemand{Pool: pool}
}

// Holds reports whether the node lists the CIDR under the pool.
func (n *CiliumNode) Holds(pool string, p netip.Prefix) bool {
	return slices.Contains(n.AllocatedIn(pool), p)
}

func (n *CiliumNode) TableHeader() []string {
	return []string{"Name", "Requested", "Allocated", "Error"}
}

func (n *CiliumNode) TableRow() []string {
	var req, alloc []string
	for _, d := range n.Requested {
		req = append(req, fmt.Sprintf("%s=%d/%d", d.Pool, d.IPv4, d.IPv6))
	}
	for _, a := range n.Allocated {
		cs := make([]string, len(a.CIDRs))
		for i, c := range a.CIDRs {
			cs[i] = c.String()
		}
		alloc = append(alloc, a.Pool+"="+strings.Join(cs, ","))
	}
	return []string{n.Name, dash(strings.Join(req, " ")), dash(strings.Join(alloc, " ")), dash(n.OperatorError)}
}

// CiliumNodeNameIndex is the primary index of cilium-nodes.
var CiliumNodeNameIndex = statedb.Index[*CiliumNode, string]{
	Name: "name",
	FromObject: func(n *CiliumNode) index.KeySet {
		return index.NewKeySet(index.String(n.Name))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewCiliumNodesTable creates the cilium-nodes table.
func NewCiliumNodesTable(db *statedb.DB) (statedb.RWTable[*CiliumNode], error) {
	return statedb.NewTable(db, CiliumNodesTableName, CiliumNodeNameIndex)
}

// CiliumNodeFromK8s converts a CiliumNode into a row.
func CiliumNodeFromK8s(n *v2.CiliumNode) *CiliumNode {
	out := &CiliumNode{
		Name: n.Name, UID: string(n.UID), ResourceVersion: n.ResourceVersion,
		CreationTimestamp: n.CreationTimestamp.Time, OperatorError: n.Status.IPAM.OperatorStatus.Error,
		UsedDigest: UsedDigest(n.Status.IPAM.Used),
	}
	for _, o := range n.OwnerReferences {
		if o.Kind == "Node" && o.APIVersion == "v1" {
			out.OwnerNodeUID = string(o.UID)
		}
	}
	for _, r := range n.Spec.IPAM.Pools.Requested {
		out.Requested = append(out.Requested, PoolDemand{Pool: r.Pool, IPv4: r.Needed.IPv4Addrs, IPv6: r.Needed.IPv6Addrs})
	}
	for _, a := range n.Spec.IPAM.Pools.Allocated {
		pc := PoolCIDRs{Pool: a.Pool}
		for i, c := range a.CIDRs {
			p, err := netip.ParsePrefix(string(c))
			if err != nil {
				out.AllocatedErrors = append(out.AllocatedErrors, fmt.Sprintf("spec.ipam.pools.allocated[pool %s].cidrs[%d]: %v", a.Pool, i, err))
				continue
			}
			pc.CIDRs = append(pc.CIDRs, p.Masked())
		}
		out.Allocated = append(out.Allocated, pc)
	}
	usage := map[string]*PoolUsage{}
	for ip, u := range n.Status.IPAM.Used {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			continue
		}
		pu := usage[u.Resource]
		if pu == nil {
			pu = &PoolUsage{Pool: u.Resource}
			usage[u.Resource] = pu
		}
		if a.Is4() {
			pu.IPv4++
		} else {
			pu.IPv6++
		}
	}
	for _, name := range slices.Sorted(mapsKeys(usage)) {
		out.Usage = append(out.Usage, *usage[name])
	}
	return out
}

func mapsKeys[V any](m map[string]V) iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
