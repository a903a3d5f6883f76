package tables

import (
	"net/netip"
	"strings"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// BGPRoutesTableName is the table of the routes this node advertises: one
// row per instance, peer and prefix, with the attributes and the reasons.
// The BGP speaker makes GoBGP's RIB and export policy match it.
const BGPRoutesTableName = "bgp-routes"

// BGPRoute is a prefix advertised to one peer.
type BGPRoute struct {
	Instance    string        `json:"instance"`
	Peer        string        `json:"peer"`
	PeerAddress netip.Addr    `json:"peerAddress"`
	Prefix      netip.Prefix  `json:"prefix"`
	Attributes  BGPAttributes `json:"attributes"`
	// Reasons say what asked for the route, e.g. "Service default/web
	// LoadBalancerIP (advertisement lb)".
	Reasons []string `json:"reasons"`
}

// Key is "instance/peer/prefix".
func (r *BGPRoute) Key() string { return BGPRouteKey(r.Instance, r.Peer, r.Prefix) }

// BGPRouteKey is the primary key of a route.
func BGPRouteKey(instance, peer string, p netip.Prefix) string {
	return instance + "/" + peer + "/" + p.String()
}

func (r *BGPRoute) TableHeader() []string {
	return []string{"Instance", "Peer", "Prefix", "Attributes", "Reasons"}
}

func (r *BGPRoute) TableRow() []string {
	return []string{r.Instance, r.Peer + "(" + addrOrDash(r.PeerAddress) + ")", r.Prefix.String(),
		dash(r.Attributes.String()), strings.Join(r.Reasons, "; ")}
}

var (
	// BGPRouteKeyIndex is the primary index: "instance/peer/prefix".
	BGPRouteKeyIndex = statedb.Index[*BGPRoute, string]{
		Name:       "key",
		FromObject: func(r *BGPRoute) index.KeySet { return index.NewKeySet(index.String(r.Key())) },
		FromKey:    index.String,
		FromString: index.FromString,
		Unique:     true,
	}
	// BGPRoutePrefixIndex finds the peers a prefix goes to:
	// "instance/prefix".
	BGPRoutePrefixIndex = statedb.Index[*BGPRoute, string]{
		Name: "prefix",
		FromObject: func(r *BGPRoute) index.KeySet {
			return index.NewKeySet(index.String(r.Instance + "/" + r.Prefix.String()))
		},
		FromKey:    index.String,
		FromString: index.FromString,
	}
)

// NewBGPRoutesTable creates the bgp-routes table.
func NewBGPRoutesTable(db *statedb.DB) (statedb.RWTable[*BGPRoute], error) {
	return statedb.NewTable(db, BGPRoutesTableName, BGPRouteKeyIndex, BGPRoutePrefixIndex)
}
