package metrics

import (
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"
)

// reconcilerMetrics reports every statedb reconciler (service status, pool
// status, ARP responder map) to Prometheus.
type reconcilerMetrics struct {
	duration    *prometheus.HistogramVec
	errorsTotal *prometheus.CounterVec
	errorsNow   *prometheus.GaugeVec
	pruneErrors *prometheus.CounterVec
}

func newReconcilerMetrics(reg prometheus.Registerer) reconciler.Metrics {
	m := &reconcilerMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "reconcile_duration_seconds",
			Help:    "Duration of reconciliation rounds, by reconciler and operation.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"reconciler", "operation"}),
		errorsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "reconcile_errors_total",
			Help: "Objects that failed to reconcile (each is retried), by reconciler.",
		}, []string{"reconciler"}),
		errorsNow: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "reconcile_errors_current",
			Help: "Objects currently failing to reconcile, by reconciler.",
		}, []string{"reconciler"}),
		pruneErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "reconcile_prune_errors_total",
			Help: "Failed prune (full resync) rounds, by reconciler.",
		}, []string{"reconciler"}),
	}
	reg.MustRegister(m.duration, m.errorsTotal, m.errorsNow, m.pruneErrors)
	return m
}

func name(moduleID cell.FullModuleID, n string) string {
	if n == "" {
		return moduleID.String()
	}
	return moduleID.String() + "-" + n
}

func (m *reconcilerMetrics) ReconciliationDuration(moduleID cell.FullModuleID, n, op string, d time.Duration) {
	m.duration.WithLabelValues(name(moduleID, n), op).Observe(d.Seconds())
}

func (m *reconcilerMetrics) ReconciliationErrors(moduleID cell.FullModuleID, n string, new, current int) {
	m.errorsTotal.WithLabelValues(name(moduleID, n)).Add(float64(new))
	m.errorsNow.WithLabelValues(name(moduleID, n)).Set(float64(current))
}

func (m *reconcilerMetrics) PruneError(moduleID cell.FullModuleID, n string, _ error) {
	m.pruneErrors.WithLabelValues(name(moduleID, n)).Inc()
}

func (m *reconcilerMetrics) PruneDuration(moduleID cell.FullModuleID, n string, d time.Duration) {
	m.duration.WithLabelValues(name(moduleID, n), "prune").Observe(d.Seconds())
}
