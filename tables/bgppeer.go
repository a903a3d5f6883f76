package tables

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/cilium/statedb"
)

// BGPPeersTableName is the table of this node's BGP sessions as the
// speaker sees them.
const BGPPeersTableName = "bgp-peers"

// BGP session states as Cilium reports them (peeringState, and the state
// label of herald_bgp_session_state): the text of Cilium's
// types.SessionState, so that scripts and alerts written for Cilium read
// Herald's the same way.
const (
	BGPStateIdle        = "idle"
	BGPStateConnect     = "connect"
	BGPStateActive      = "active"
	BGPStateOpenSent    = "open_sent"
	BGPStateOpenConfirm = "open_confirm"
	BGPStateEstablished = "established"
	BGPStateUnknown     = "unknown"
)

// BGPPeerState is one session of one instance.
type BGPPeerState struct {
	Instance string     `json:"instance"`
	Peer     string     `json:"peer"`
	Address  netip.Addr `json:"address"`
	ASN      int64      `json:"asn"`
	State    string     `json:"state"`
	// Since is when the session entered State.
	Since time.Time `json:"since"`
	// LastError is why the session last went down or failed to come up,
	// e.g. a NOTIFICATION from the peer or a connect timeout.
	LastError               string `json:"lastError,omitempty"`
	AppliedHoldTimeSeconds  int32  `json:"appliedHoldTimeSeconds,omitempty"`
	AppliedKeepaliveSeconds int32  `json:"appliedKeepaliveSeconds,omitempty"`
	GracefulRestart         bool   `json:"gracefulRestart,omitempty"` // negotiated
	// BFD is the state of the peer's BFD session (bgp-bfd); "": no BFD.
	BFD string `json:"bfd,omitempty"`
	// Routes are the advertised and received counts per family.
	Routes []BGPFamilyRoutes `json:"routes,omitempty"`
	// UpdatesSent and UpdatesReceived count the UPDATE messages of the
	// session since the speaker added the peer. They move only when routes
	// do (keepalives are other messages), so the row changes no more often.
	UpdatesSent     uint64 `json:"updatesSent,omitempty"`
	UpdatesReceived uint64 `json:"updatesReceived,omitempty"`
	// NextHopError says why the peer (IPv4, with the ipv6-unicast family)
	// gets none of the node's IPv6 routes: the node has no IPv6 address
	// to name as their next hop on the interface toward it.
	NextHopError string `json:"nextHopError,omitempty"`
}

// BGPFamilyRoutes counts one family's routes of a session.
type BGPFamilyRoutes struct {
	AFI        string `json:"afi"`
	SAFI       string `json:"safi"`
	Advertised int    `json:"advertised"`
	Received   int    `json:"received"`
}

// Key is "instance/peer".
func (p *BGPPeerState) Key() string { return p.Instance + "/" + p.Peer }

func (p *BGPPeerState) TableHeader() []string {
	return []string{"Instance", "Peer", "Address", "ASN", "State", "BFD", "Since", "Routes", "LastError"}
}

func (p *BGPPeerState) TableRow() []string {
	var routes []string
	for _, r := range p.Routes {
		routes = append(routes, fmt.Sprintf("%s: %d out %d in", r.AFI, r.Advertised, r.Received))
	}
	since := "-"
	if !p.Since.IsZero() {
		since = p.Since.UTC().Format(time.RFC3339)
	}
	return []string{p.Instance, p.Peer, addrOrDash(p.Address), fmt.Sprint(p.ASN), p.State, dash(p.BFD), since,
		dash(strings.Join(routes, ", ")), dash(strings.Join(nonEmpty(p.LastError, p.NextHopError), "; "))}
}

// BGPPeerKeyIndex is the primary index of bgp-peers.
var BGPPeerKeyIndex = nameIndex(func(p *BGPPeerState) string { return p.Key() })

// NewBGPPeersTable creates the bgp-peers table.
func NewBGPPeersTable(db *statedb.DB) (statedb.RWTable[*BGPPeerState], error) {
	return statedb.NewTable(db, BGPPeersTableName, BGPPeerKeyIndex)
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
