package speaker

import (
	"strconv"
	"time"

	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/tables"
)

// peerCollector turns bgp-peers into Prometheus metrics at each scrape:
// one series per session (and family), read from the table the speaker
// refreshes every peerRefreshInterval, so a scrape costs no GoBGP call.
type peerCollector struct {
	db    *statedb.DB
	peers statedb.Table[*tables.BGPPeerState]
	now   func() time.Time
}

var (
	peerLabels   = []string{"instance", "peer", "peer_address", "peer_asn"}
	familyLabels = append(append([]string{}, peerLabels...), "afi", "safi")

	descSessionUp = prometheus.NewDesc("herald_bgp_session_up",
		"Whether the BGP session with the peer is established (1) or not (0)", peerLabels, nil)
	descSessionState = prometheus.NewDesc("herald_bgp_session_state",
		"The BGP session's state (idle, connect, active, open_sent, open_confirm, established, unknown), as a label of a series of value 1", append(append([]string{}, peerLabels...), "state"), nil)
	descUptime = prometheus.NewDesc("herald_bgp_session_uptime_seconds",
		"How long the BGP session has been established; 0 while it is not", peerLabels, nil)
	descAdvertised = prometheus.NewDesc("herald_bgp_routes_advertised",
		"Routes advertised to the peer, per address family", familyLabels, nil)
	descReceived = prometheus.NewDesc("herald_bgp_routes_received",
		"Routes received from the peer, per address family", familyLabels, nil)
	descUpdatesSent = prometheus.NewDesc("herald_bgp_updates_sent_total",
		"UPDATE messages sent to the peer since the speaker added it", peerLabels, nil)
	descUpdatesReceived = prometheus.NewDesc("herald_bgp_updates_received_total",
		"UPDATE messages received from the peer since the speaker added it", peerLabels, nil)
)

func (c *peerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSessionUp, descSessionState, descUptime, descAdvertised, descReceived, descUpdatesSent, descUpdatesReceived} {
		ch <- d
	}
}

func (c *peerCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	for p := range c.peers.All(c.db.ReadTxn()) {
		labels := []string{p.Instance, p.Peer, p.Address.String(), strconv.FormatInt(p.ASN, 10)}
		up, uptime := 0.0, 0.0
		if p.State == tables.BGPStateEstablished {
			up = 1
			if !p.Since.IsZero() {
				uptime = max(0, now.Sub(p.Since).Seconds())
			}
		}
		ch <- prometheus.MustNewConstMetric(descSessionUp, prometheus.GaugeValue, up, labels...)
		ch <- prometheus.MustNewConstMetric(descSessionState, prometheus.GaugeValue, 1, append(labels, p.State)...)
		ch <- prometheus.MustNewConstMetric(descUptime, prometheus.GaugeValue, uptime, labels...)
		for _, r := range p.Routes {
			fl := append(append([]string{}, labels...), r.AFI, r.SAFI)
			ch <- prometheus.MustNewConstMetric(descAdvertised, prometheus.GaugeValue, float64(r.Advertised), fl...)
			ch <- prometheus.MustNewConstMetric(descReceived, prometheus.GaugeValue, float64(r.Received), fl...)
		}
		ch <- prometheus.MustNewConstMetric(descUpdatesSent, prometheus.CounterValue, float64(p.UpdatesSent), labels...)
		ch <- prometheus.MustNewConstMetric(descUpdatesReceived, prometheus.CounterValue, float64(p.UpdatesReceived), labels...)
	}
}
