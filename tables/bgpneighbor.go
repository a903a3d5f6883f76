package tables

import (
	"net/netip"
	"strconv"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// BGPLinkNeighborsTableName is the table of the node's IPv6 link-local
// neighbours on the interfaces BGP unnumbered peers can be on: such a peer
// is the one router (or neighbour) of its interface.
const BGPLinkNeighborsTableName = "bgp-link-neighbors"

// BGPLinkNeighbor is an IPv6 link-local neighbour of the node, as the
// kernel's neighbour table has it (an entry that failed is left out).
type BGPLinkNeighbor struct {
	Device  string     `json:"device"`
	Address netip.Addr `json:"address"` // without a zone: Device is it
	// Router: the neighbour said it is a router (a Router Advertisement,
	// or the R flag of a Neighbor Advertisement), since the kernel has it.
	Router bool `json:"router"`
}

// Key is the row's primary key, "device/address".
func (n *BGPLinkNeighbor) Key() string { return n.Device + "/" + n.Address.String() }

func (n *BGPLinkNeighbor) TableHeader() []string {
	return []string{"Device", "Address", "Router"}
}

func (n *BGPLinkNeighbor) TableRow() []string {
	return []string{n.Device, n.Address.String(), strconv.FormatBool(n.Router)}
}

// BGPLinkNeighborKeyIndex is the primary index of bgp-link-neighbors:
// "device/address".
var BGPLinkNeighborKeyIndex = nameIndex(func(n *BGPLinkNeighbor) string { return n.Key() })

// BGPLinkNeighborDeviceIndex finds the neighbours of a device.
var BGPLinkNeighborDeviceIndex = statedb.Index[*BGPLinkNeighbor, string]{
	Name:       "device",
	FromObject: func(n *BGPLinkNeighbor) index.KeySet { return index.NewKeySet(index.String(n.Device)) },
	FromKey:    index.String,
	FromString: index.FromString,
}

// NewBGPLinkNeighborsTable creates the bgp-link-neighbors table.
func NewBGPLinkNeighborsTable(db *statedb.DB) (statedb.RWTable[*BGPLinkNeighbor], error) {
	return statedb.NewTable(db, BGPLinkNeighborsTableName, BGPLinkNeighborKeyIndex, BGPLinkNeighborDeviceIndex)
}
