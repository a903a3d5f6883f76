package speaker

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heraldlb/herald/tables"
)

// The metrics are bgp-peers as the speaker last wrote it: state, uptime
// while established, routes per family, UPDATE counters.
func TestPeerMetrics(t *testing.T) {
	db := statedb.New()
	peers, err := tables.NewBGPPeersTable(db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(10000, 0)
	wtxn := db.WriteTxn(peers)
	_, _, _ = peers.Insert(wtxn, &tables.BGPPeerState{Instance: "i1", Peer: "tor", Address: netip.MustParseAddr("198.18.0.1"), ASN: 65000,
		State: tables.BGPStateEstablished, Since: now.Add(-90 * time.Second), UpdatesSent: 7, UpdatesReceived: 2,
		Routes: []tables.BGPFamilyRoutes{{AFI: "ipv4", SAFI: "unicast", Advertised: 3, Received: 1}, {AFI: "ipv6", SAFI: "unicast", Advertised: 2}}})
	_, _, _ = peers.Insert(wtxn, &tables.BGPPeerState{Instance: "i1", Peer: "spare", Address: netip.MustParseAddr("fd00::1"), ASN: 65001,
		State: "active", Since: now.Add(-5 * time.Second)})
	wtxn.Commit()

	c := &peerCollector{db: db, peers: peers, now: func() time.Time { return now }}
	want := `
# HELP herald_bgp_routes_advertised Routes advertised to the peer, per address family
# TYPE herald_bgp_routes_advertised gauge
herald_bgp_routes_advertised{afi="ipv4",instance="i1",peer="tor",peer_address="198.18.0.1",peer_asn="65000",safi="unicast"} 3
herald_bgp_routes_advertised{afi="ipv6",instance="i1",peer="tor",peer_address="198.18.0.1",peer_asn="65000",safi="unicast"} 2
# HELP herald_bgp_routes_received Routes received from the peer, per address family
# TYPE herald_bgp_routes_received gauge
herald_bgp_routes_received{afi="ipv4",instance="i1",peer="tor",peer_address="198.18.0.1",peer_asn="65000",safi="unicast"} 1
herald_bgp_routes_received{afi="ipv6",instance="i1",peer="tor",peer_address="198.18.0.1",peer_asn="65000",safi="unicast"} 0
# HELP herald_bgp_session_state The BGP session's state (idle, connect, active, open_sent, open_confirm, established, unknown), as a label of a series of value 1
# TYPE herald_bgp_session_state gauge
herald_bgp_session_state{instance="i1",peer="spare",peer_address="fd00::1",peer_asn="65001",state="active"} 1
herald_bgp_session_state{instance="i1",peer="tor",peer_address="198.18.0.1",peer_asn="65000",state="established"} 1
# HELP herald_bgp_session_up Whether the BGP session with the peer is established (1) or not (0)
# TYPE herald_bgp_session_up gauge
herald_bgp_session_up{instance="i1",peer="spare",peer_address="fd00::1",peer_asn="65001"} 0
herald_bgp_session_up{instance="i1",peer="tor",peer_address="198.18.0.1",peer_asn="65000"} 1
# HELP herald_bgp_session_uptime_seconds How long the BGP session has been established; 0 while it is not
# TYPE herald_bgp_session_uptime_seconds gauge
herald_bgp_session_uptime_seconds{instance="i1",peer="spare",peer_address="fd00::1",peer_asn="65001"} 0
herald_bgp_session_uptime_seconds{instance="i1",peer="tor",peer_address="198.18.0.1",peer_asn="65000"} 90
# HELP herald_bgp_updates_received_total UPDATE messages received from the peer since the speaker added it
# TYPE herald_bgp_updates_received_total counter
herald_bgp_updates_received_total{instance="i1",peer="spare",peer_address="fd00::1",peer_asn="65001"} 0
herald_bgp_updates_received_total{instance="i1",peer="tor",peer_address="198.18.0.1",peer_asn="65000"} 2
# HELP herald_bgp_updates_sent_total UPDATE messages sent to the peer since the speaker added it
# TYPE herald_bgp_updates_sent_total counter
herald_bgp_updates_sent_total{instance="i1",peer="spare",peer_address="fd00::1",peer_asn="65001"} 0
herald_bgp_updates_sent_total{instance="i1",peer="tor",peer_address="198.18.0.1",peer_asn="65000"} 7
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
