package tables

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/cilium/statedb"
)

// BGPBFD is a peer's BFD configuration (CiliumBGPPeerConfig spec.bfd),
// with the defaults filled in.
type BGPBFD struct {
	ReceiveIntervalMs  int32 `json:"receiveIntervalMs"`
	TransmitIntervalMs int32 `json:"transmitIntervalMs"`
	DetectMultiplier   int32 `json:"detectMultiplier"`
	Passive            bool  `json:"passive,omitempty"`
}

func (b BGPBFD) String() string {
	s := fmt.Sprintf("rx %dms tx %dms x%d", b.ReceiveIntervalMs, b.TransmitIntervalMs, b.DetectMultiplier)
	if b.Passive {
		s += " passive"
	}
	return s
}

// BGPBFDSessionsTableName is the table of this node's BFD sessions with
// its BGP peers, one per peer address.
const BGPBFDSessionsTableName = "bgp-bfd"

// BFD session states (RFC 5880), as bgp-bfd and the peer status show them.
const (
	BFDStateAdminDown = "admin-down"
	BFDStateDown      = "down"
	BFDStateInit      = "init"
	BFDStateUp        = "up"
)

// BGPBFDSession is the BFD session with one peer address.
type BGPBFDSession struct {
	Peer   netip.Addr `json:"peer"`
	Local  netip.Addr `json:"local,omitzero"` // invalid: the kernel picks
	Config BGPBFD     `json:"config"`
	// State and RemoteState are the local and the peer's session states.
	State       string `json:"state"`
	RemoteState string `json:"remoteState"`
	// Diagnostic is why the session last left Up (RFC 5880 §4.1).
	Diagnostic string    `json:"diagnostic,omitempty"`
	Since      time.Time `json:"since"`
	// TxInterval and DetectTime are negotiated with the peer, while Up:
	// how often this node sends, and how long the peer may stay silent.
	TxInterval time.Duration `json:"txInterval,omitempty"`
	DetectTime time.Duration `json:"detectTime,omitempty"`
	// Failures counts the times the session went from Up to Down because
	// the path failed (not because the peer took it down on purpose);
	// the speaker resets the BGP session on each.
	Failures uint64 `json:"failures"`
	// LocalDiscriminator tells a session from its replacement.
	LocalDiscriminator uint32 `json:"localDiscriminator"`
	// Error says why the session cannot run (e.g. port 3784 is taken).
	Error string `json:"error,omitempty"`
}

func (s *BGPBFDSession) TableHeader() []string {
	return []string{"Peer", "Config", "State", "Remote", "Diagnostic", "Since", "Tx", "Detect", "Failures", "Error"}
}

func (s *BGPBFDSession) TableRow() []string {
	since := "-"
	if !s.Since.IsZero() {
		since = s.Since.UTC().Format(time.RFC3339)
	}
	dur := func(d time.Duration) string {
		if d == 0 {
			return "-"
		}
		return d.String()
	}
	return []string{addrOrDash(s.Peer), s.Config.String(), s.State, s.RemoteState, dash(s.Diagnostic), since,
		dur(s.TxInterval), dur(s.DetectTime), fmt.Sprint(s.Failures), dash(s.Error)}
}

// BGPBFDPeerIndex is the primary index of bgp-bfd: the peer address.
var BGPBFDPeerIndex = nameIndex(func(s *BGPBFDSession) string { return s.Peer.String() })

// NewBGPBFDSessionsTable creates the bgp-bfd table.
func NewBGPBFDSessionsTable(db *statedb.DB) (statedb.RWTable[*BGPBFDSession], error) {
	return statedb.NewTable(db, BGPBFDSessionsTableName, BGPBFDPeerIndex)
}
