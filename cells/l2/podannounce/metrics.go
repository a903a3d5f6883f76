package podannounce

import "github.com/prometheus/client_golang/prometheus"

// Results of a send, the result label.
const (
	resultSent   = "sent"
	resultFailed = "failed"
)

// metrics count the announcements as they are sent. Waiting for a missing
// or down interface is no attempt and counts nothing.
type metrics struct {
	garps  *prometheus.CounterVec
	sent   prometheus.Counter
	failed prometheus.Counter
}

func newMetrics(node string) *metrics {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_l2_pod_gratuitous_arps_total",
		Help: "Gratuitous ARP replies for pod addresses (L2 pod announcements), by result: sent, or failed (retried).",
	}, []string{"node", "result"})
	// Both series exist from the start: a rate of failures reads 0, not
	// nothing, until the first one.
	return &metrics{garps: v, sent: v.WithLabelValues(node, resultSent), failed: v.WithLabelValues(node, resultFailed)}
}
