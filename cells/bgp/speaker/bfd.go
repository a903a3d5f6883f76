package speaker

import (
	"context"
	"fmt"
	"net/netip"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/heraldlb/herald/tables"
)

// bfdFailures remembers, per peer address, how many BFD failures the
// speaker has acted upon.
type bfdFailures map[netip.Addr]uint64

// resetOnBFDFailure resets the BGP session of every configured peer with
// BFD whose BFD session failed since the last look: the path is gone, so
// the session is torn down now instead of at the end of the hold time
// (the router, told by its own BFD, does the same on its side). The
// session comes back by itself once the peer answers again. It returns
// the rows read (for bgp-peers) and the watch of bgp-bfd.
func resetOnBFDFailure(ctx context.Context, p params, speakers map[string]*speaker, seen bfdFailures) (map[netip.Addr]*tables.BGPBFDSession, <-chan struct{}) {
	rows := map[netip.Addr]*tables.BGPBFDSession{}
	all, watch := p.BFD.AllWatch(p.DB.ReadTxn())
	for r := range all {
		rows[r.Peer] = r
	}
	for addr := range seen {
		if rows[addr] == nil {
			delete(seen, addr) // a new session starts counting at 0
		}
	}
	for _, s := range speakers {
		for _, peer := range s.peers {
			row := rows[peer.Address]
			if peer.BFD == nil || row == nil || row.Failures <= seen[peer.Address] {
				continue
			}
			seen[peer.Address] = row.Failures
			reason := fmt.Sprintf("BFD session down (%s)", row.Diagnostic)
			p.Log.Warn("Resetting BGP session: its BFD session went down", "instance", s.name, "peer", peer.Name,
				"address", peer.Address, "diagnostic", row.Diagnostic)
			if err := s.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: peer.Address.String(), Communication: reason}); err != nil {
				p.Log.Warn("Resetting BGP session failed", "instance", s.name, "peer", peer.Name, "error", err)
			}
			s.log.Record(peer.Address.String(), reason)
		}
	}
	return rows, watch
}

// bfdState is what bgp-peers shows of a peer's BFD session: "" without
// BFD, its state otherwise ("down" until the session is running).
func bfdState(peer tables.BGPPeer, rows map[netip.Addr]*tables.BGPBFDSession) string {
	if peer.BFD == nil {
		return ""
	}
	if r := rows[peer.Address]; r != nil {
		return r.State
	}
	return tables.BFDStateDown
}
