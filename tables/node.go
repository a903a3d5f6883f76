package tables

import (
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	corev1 "k8s.io/api/core/v1"
)

// NodesTableName is the table of Nodes the agent knows: its own, and with
// multi-pool IPAM every Node (their addresses for routes, their existence
// for the pod CIDR allocator).
const NodesTableName = "nodes"

// Node is a Kubernetes Node's name, labels and addresses.
type Node struct {
	Name              string            `json:"name"`
	UID               string            `json:"uid"`
	ResourceVersion   string            `json:"resourceVersion"`
	CreationTimestamp time.Time         `json:"creationTimestamp"`
	Labels            map[string]string `json:"labels,omitempty"`
	// InternalIPs are the Node's InternalIP addresses, in order.
	InternalIPs []netip.Addr `json:"internalIPs,omitempty"`
	// PodCIDRs are spec.podCIDRs (Kubernetes IPAM), which BGP advertises
	// for a PodCIDR advertisement.
	PodCIDRs []netip.Prefix `json:"podCIDRs,omitempty"`
}

// InternalIP returns the Node's first InternalIP of the family.
func (n *Node) InternalIP(f Family) (netip.Addr, bool) {
	for _, a := range n.InternalIPs {
		if FamilyOf(a) == f {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func (n *Node) TableHeader() []string { return []string{"Name", "InternalIPs", "Labels"} }

func (n *Node) TableRow() []string {
	ls := make([]string, 0, len(n.Labels))
	for k, v := range n.Labels {
		ls = append(ls, k+"="+v)
	}
	sort.Strings(ls)
	ips := make([]string, len(n.InternalIPs))
	for i, a := range n.InternalIPs {
		ips[i] = a.String()
	}
	return []string{n.Name, dash(strings.Join(ips, ",")), dash(strings.Join(ls, ","))}
}

// NodeNameIndex is the primary index of nodes.
var NodeNameIndex = statedb.Index[*Node, string]{
	Name: "name",
	FromObject: func(n *Node) index.KeySet {
		return index.NewKeySet(index.String(n.Name))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewNodesTable creates the nodes table.
func NewNodesTable(db *statedb.DB) (statedb.RWTable[*Node], error) {
	return statedb.NewTable(db, NodesTableName, NodeNameIndex)
}

// NodeFromK8s converts a Node into a row.
func NodeFromK8s(n *corev1.Node) *Node {
	row := &Node{
		Name: n.Name, UID: string(n.UID), ResourceVersion: n.ResourceVersion,
		CreationTimestamp: n.CreationTimestamp.Time, Labels: maps(n.Labels),
	}
	for _, c := range n.Spec.PodCIDRs {
		if p, err := netip.ParsePrefix(c); err == nil {
			row.PodCIDRs = append(row.PodCIDRs, p.Masked())
		}
	}
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			row.InternalIPs = append(row.InternalIPs, ip.Unmap())
		}
	}
	return row
}
