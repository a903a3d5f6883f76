package elector

import "github.com/prometheus/client_golang/prometheus"

// electorMetrics are the elector's Prometheus metrics.
type electorMetrics struct {
	held   prometheus.Gauge
	terms  prometheus.Counter
	writes *prometheus.CounterVec
	rounds prometheus.Histogram
}

func newElectorMetrics(node string) *electorMetrics {
	labels := prometheus.Labels{"node": node}
	return &electorMetrics{
		held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_l2_groups_answered", ConstLabels: labels,
			Help: "Groups of Services (sharing their IPs) this node answers for."}),
		terms: prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_l2_liveness_terms_total", ConstLabels: labels,
			Help: "Stretches of confirmed liveness this node started: more than one means it had to stop answering (a freeze, a partition, a lost majority)."}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_l2_lease_writes_total", ConstLabels: labels,
			Help: "Announcement Lease writes by outcome (written, takeover-record, deleted, conflict, failed): one per ownership change; a takeover record, one per failed node and term."}, []string{"outcome"}),
		rounds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "herald_l2_decision_round_seconds", ConstLabels: labels,
			Help:    "Time of one decision round over every group (decided and written to the tables); the deadline moves meanwhile.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 12)}),
	}
}

func (m *electorMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.held.Describe(ch)
	m.terms.Describe(ch)
	m.writes.Describe(ch)
	m.rounds.Describe(ch)
}

func (m *electorMetrics) Collect(ch chan<- prometheus.Metric) {
	m.held.Collect(ch)
	m.terms.Collect(ch)
	m.writes.Collect(ch)
	m.rounds.Collect(ch)
}
