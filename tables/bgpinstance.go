package tables

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"

	"github.com/cilium/statedb"
)

// BGPInstancesTableName is the table of the BGP instances this node runs:
// the cluster configs that select it, joined with their peer configs, the
// node's override and the auth Secrets.
const BGPInstancesTableName = "bgp-instances"

// BGPInstance is one BGP speaker this node runs, as it should be.
type BGPInstance struct {
	Name          string     `json:"name"`
	ClusterConfig string     `json:"clusterConfig"`
	LocalASN      int64      `json:"localASN"`
	RouterID      netip.Addr `json:"routerID"`
	// ListenPort is where the speaker accepts sessions; -1: it does not
	// listen, it only connects to its peers (Cilium's default).
	ListenPort int32     `json:"listenPort"`
	Peers      []BGPPeer `json:"peers,omitempty"`
	// Error says why the instance cannot run (no router ID, no ASN); an
	// instance with an error has no speaker.
	Error string `json:"error,omitempty"`
}

// BGPPeer is one peer of an instance with its settings resolved.
type BGPPeer struct {
	Name         string     `json:"name"`
	Address      netip.Addr `json:"address"`
	ASN          int64      `json:"asn"`
	LocalAddress netip.Addr `json:"localAddress"` // invalid: the kernel picks
	PeerConfig   string     `json:"peerConfig,omitempty"`
	// DiscoveredFamily is "ipv4" or "ipv6" when Address is the gateway of
	// the node's default route of that family (autoDiscovery).
	DiscoveredFamily string `json:"discoveredFamily,omitempty"`
	// Interface is the device a session to an IPv6 link-local peer is
	// bound to (peerInterface, or BGP unnumbered); Address then carries
	// its index as zone, and LocalAddress is the device's own link-local
	// address. Set for an unnumbered peer whose neighbour is not known
	// yet too: the node advertises itself there as a router so that the
	// peer can find it.
	Interface string `json:"interface,omitempty"`
	// Unnumbered: BGP unnumbered (autoDiscovery mode Unnumbered).
	Unnumbered bool `json:"unnumbered,omitempty"`

	PeerPort            int32    `json:"peerPort"`
	ConnectRetrySeconds int32    `json:"connectRetrySeconds"`
	HoldTimeSeconds     int32    `json:"holdTimeSeconds"`
	KeepAliveSeconds    int32    `json:"keepAliveSeconds"`
	EBGPMultihop        int32    `json:"ebgpMultihop"`
	GracefulRestart     bool     `json:"gracefulRestart"`
	RestartTimeSeconds  int32    `json:"restartTimeSeconds"`
	Families            []string `json:"families"` // "ipv4-unicast", "ipv6-unicast"
	// BFD: run a BFD session with the peer; nil: none.
	BFD        *BGPBFD `json:"bfd,omitempty"`
	AuthSecret string  `json:"authSecret,omitempty"`
	// Password is the TCP-MD5 password from AuthSecret; never printed.
	Password string `json:"-"`
	// PasswordVersion changes when the Secret does, so that a new
	// password reconfigures the peer although Password is not compared
	// in print.
	PasswordVersion string `json:"passwordVersion,omitempty"`

	// Error says why the peer is not configured (its peer config or auth
	// Secret is missing, two peers share an address); the instance's
	// other peers are unaffected.
	Error string `json:"error,omitempty"`
}

// Equal compares everything the speaker configures, the password too.
func (p BGPPeer) Equal(o BGPPeer) bool { return reflect.DeepEqual(p, o) }

func (i *BGPInstance) TableHeader() []string {
	return []string{"Instance", "ClusterConfig", "ASN", "RouterID", "ListenPort", "Peers", "Error"}
}

func (i *BGPInstance) TableRow() []string {
	var peers []string
	for _, p := range i.Peers {
		s := fmt.Sprintf("%s=%s/AS%d", p.Name, addrOrDash(p.Address), p.ASN)
		if p.LocalAddress.IsValid() {
			s += " from " + p.LocalAddress.String()
		}
		if p.BFD != nil {
			s += "+bfd"
		}
		if p.Error != "" {
			s += "(error: " + p.Error + ")"
		}
		peers = append(peers, s)
	}
	return []string{i.Name, i.ClusterConfig, fmt.Sprint(i.LocalASN), addrOrDash(i.RouterID), fmt.Sprint(i.ListenPort),
		dash(strings.Join(peers, " ")), dash(i.Error)}
}

// BGPInstanceNameIndex is the primary index of bgp-instances.
var BGPInstanceNameIndex = nameIndex(func(i *BGPInstance) string { return i.Name })

// NewBGPInstancesTable creates the bgp-instances table.
func NewBGPInstancesTable(db *statedb.DB) (statedb.RWTable[*BGPInstance], error) {
	return statedb.NewTable(db, BGPInstancesTableName, BGPInstanceNameIndex)
}
