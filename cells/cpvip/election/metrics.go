package election

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	owner, present, mismatched, misplaced prometheus.Gauge
	takeovers                             prometheus.Counter
}

func newMetrics() *metrics {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	return &metrics{
		owner:      g("herald_control_plane_vip_owner", "1 while this node answers for the control-plane VIPs"),
		present:    g("herald_control_plane_peers_present", "Other control-plane nodes heard within the fence window"),
		mismatched: g("herald_control_plane_peer_config_mismatches", "Control-plane nodes whose --vips or --peers differ from this node's (they do not elect together)"),
		misplaced:  g("herald_control_plane_vip_misplaced", "1 while a VIP is on no subnet of a selected device (this node announces none)"),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_control_plane_vip_takeovers_total",
			Help: "Times this node took the control-plane VIPs over"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.owner, m.present, m.mismatched, m.misplaced, m.takeovers}
}
