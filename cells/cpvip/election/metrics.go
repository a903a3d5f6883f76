package election

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	owner, present, mismatched prometheus.Gauge
	configErrors               *prometheus.GaugeVec
	takeovers                  prometheus.Counter
}

func newMetrics() *metrics {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	return &metrics{
		owner:      g("herald_control_plane_vip_owner", "1 while this node answers for the control-plane VIPs"),
		present:    g("herald_control_plane_peers_present", "Other control-plane nodes heard within the fence window"),
		mismatched: g("herald_control_plane_peer_config_mismatches", "Control-plane nodes whose --vips or --peers differ from this node's (they do not elect together)"),
		configErrors: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "herald_control_plane_candidacy_errors",
			Help: "1 while this node is no candidate for the VIPs because of its own setup: kind vip-subnet (a VIP on no subnet of a selected device), arp-ignore (arp_ignore cannot be set), local-route (the VIPs' local routes cannot be added), transport (the election's address and port cannot be bound)"}, []string{"kind"}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_control_plane_vip_takeovers_total",
			Help: "Times this node took the control-plane VIPs over"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.owner, m.present, m.mismatched, m.configErrors, m.takeovers}
}
