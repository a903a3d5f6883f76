package tables

import (
	"net/netip"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	"github.com/cilium/statedb/reconciler"
)

// NodeRoutesTableName is the table of the routes to other nodes' pod CIDRs
// this node wants (auto-direct-node-routes).
const NodeRoutesTableName = "node-routes"

// NodeRouteProtocol marks Herald's routes in the kernel (`ip route show
// proto 196`): the reconciler removes only routes it made.
const NodeRouteProtocol = 196

// NodeRoute is a route to another node's pod CIDR through that node's
// address.
type NodeRoute struct {
	Dst  netip.Prefix `json:"dst"`
	Via  netip.Addr   `json:"via"`
	Node string       `json:"node"`
	Pool string       `json:"pool"`

	Status reconciler.Status `json:"status"`
}

func (r *NodeRoute) Clone() *NodeRoute                        { c := *r; return &c }
func (r *NodeRoute) GetStatus() reconciler.Status             { return r.Status }
func (r *NodeRoute) SetStatus(s reconciler.Status) *NodeRoute { r.Status = s; return r }
func (r *NodeRoute) TableHeader() []string                    { return []string{"Dst", "Via", "Node", "Pool", "Status"} }
func (r *NodeRoute) TableRow() []string {
	return []string{r.Dst.String(), r.Via.String(), r.Node, r.Pool, r.Status.String()}
}

// NodeRouteDstIndex is the primary index: the destination.
var NodeRouteDstIndex = statedb.Index[*NodeRoute, netip.Prefix]{
	Name:       "dst",
	FromObject: func(r *NodeRoute) index.KeySet { return index.NewKeySet(index.NetIPPrefix(r.Dst)) },
	FromKey:    index.NetIPPrefix,
	FromString: index.NetIPPrefixString,
	Unique:     true,
}

// NodeRouteNodeIndex finds the routes through one node.
var NodeRouteNodeIndex = statedb.Index[*NodeRoute, string]{
	Name:       "node",
	FromObject: func(r *NodeRoute) index.KeySet { return index.NewKeySet(index.String(r.Node)) },
	FromKey:    index.String,
	FromString: index.FromString,
}

// NewNodeRoutesTable creates the node-routes table.
func NewNodeRoutesTable(db *statedb.DB) (statedb.RWTable[*NodeRoute], error) {
	return statedb.NewTable(db, NodeRoutesTableName, NodeRouteDstIndex, NodeRouteNodeIndex)
}
