package nodeipam

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
)

// metrics of the node's pod IPAM: addresses per pool are read from the
// state at scrape time (never out of step with what the node hands out);
// plugin requests are counted and timed as they are served.
type metrics struct {
	a         *agent
	addresses *prometheus.Desc
	cidrs     *prometheus.Desc
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
}

func newMetrics(a *agent) *metrics {
	node := prometheus.Labels{"node": a.node}
	return &metrics{
		a: a,
		addresses: prometheus.NewDesc("herald_ipam_node_addresses",
			"Pod addresses of a pool on this node by state: capacity (usable addresses of the node's CIDRs that still hand out), in_use, pending (ADDs waiting for a CIDR).",
			[]string{"pool", "family", "state"}, node),
		cidrs: prometheus.NewDesc("herald_ipam_node_cidrs",
			"Pod CIDRs of a pool this node holds.",
			[]string{"pool", "family"}, node),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "herald_ipam_cni_requests_total",
			Help:        "Requests of the herald-ipam CNI plugin by operation (add, del, check, gc, status) and outcome (success, or the CNI error: try_again_later, pool_exhausted, pool_conflict, pool_deleting, pool_mask_size, unknown_pool, bad_annotation, invalid_request, invalid_environment, io_failure).",
			ConstLabels: node,
		}, []string{"operation", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "herald_ipam_cni_request_duration_seconds",
			Help:        "Time the agent took to answer a herald-ipam request (an ADD that waits for a CIDR or its Pod included).",
			ConstLabels: node,
			Buckets:     []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"operation"}),
	}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.addresses
	ch <- m.cidrs
	m.requests.Describe(ch)
	m.duration.Describe(ch)
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.duration.Collect(ch)
	m.a.mu.Lock()
	if m.a.state == nil { // not restored yet
		m.a.mu.Unlock()
		return
	}
	inUse, pending := m.a.state.usage()
	capacity, held := m.a.state.capacity()
	m.a.mu.Unlock()
	all := map[poolFamily]bool{}
	for pf := range capacity {
		all[pf] = true
	}
	for pf := range inUse {
		all[pf] = true
	}
	for pf := range pending {
		all[pf] = true
	}
	for pf := range all {
		fam := strings.ToLower(pf.fam.String())
		ch <- prometheus.MustNewConstMetric(m.addresses, prometheus.GaugeValue, float64(capacity[pf]), pf.pool, fam, "capacity")
		ch <- prometheus.MustNewConstMetric(m.addresses, prometheus.GaugeValue, float64(inUse[pf]), pf.pool, fam, "in_use")
		ch <- prometheus.MustNewConstMetric(m.addresses, prometheus.GaugeValue, float64(pending[pf]), pf.pool, fam, "pending")
		ch <- prometheus.MustNewConstMetric(m.cidrs, prometheus.GaugeValue, float64(held[pf]), pf.pool, fam)
	}
}

// instrument counts and times the requests of one operation.
func (m *metrics) instrument(op string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &outcomeRecorder{ResponseWriter: w}
		h(rec, r)
		m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
		m.requests.WithLabelValues(op, rec.outcome()).Inc()
	}
}

// outcomeRecorder remembers the CNI error code of the answer (reply
// reports it before writing the body).
type outcomeRecorder struct {
	http.ResponseWriter
	code uint
	err  bool
}

func (o *outcomeRecorder) outcome() string {
	if !o.err {
		return "success"
	}
	return outcomeName(o.code)
}

func outcomeName(code uint) string {
	switch code {
	case ipamv1.CodeTryAgainLater:
		return "try_again_later"
	case ipamv1.CodePoolExhausted:
		return "pool_exhausted"
	case ipamv1.CodeUnknownPool:
		return "unknown_pool"
	case ipamv1.CodeBadAnnotation:
		return "bad_annotation"
	case ipamv1.CodePoolConflict:
		return "pool_conflict"
	case ipamv1.CodePoolDeleting:
		return "pool_deleting"
	case ipamv1.CodePoolMaskSize:
		return "pool_mask_size"
	case ipamv1.CodeInvalidRequest:
		return "invalid_request"
	case ipamv1.CodeInvalidEnvironment:
		return "invalid_environment"
	default:
		return "io_failure"
	}
}

// errorCode tells the recorder, if w is one, which CNI error is answered.
func errorCode(w http.ResponseWriter, err error) {
	o, ok := w.(*outcomeRecorder)
	if !ok {
		return
	}
	o.err = true
	o.code = ipamv1.CodeIOFailure
	var ae *apiError
	if errors.As(err, &ae) {
		o.code = ae.body.Code
	}
}
