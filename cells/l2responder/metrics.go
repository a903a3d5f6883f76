package l2responder

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the responder: ARP replies are read from the BPF map's
// counters at scrape time; gratuitous ARPs are counted as they are sent.
type metrics struct {
	h       *handle
	node    string
	replies *prometheus.Desc
	garps   prometheus.Counter
}

func newMetrics(h *handle, node string) *metrics {
	return &metrics{
		h: h, node: node,
		replies: prometheus.NewDesc("herald_l2_arp_replies_total",
			"ARP replies the eBPF responder sent, by interface (the responses_sent counters of l2_responder_v4).",
			[]string{"node", "ifindex"}, nil),
		garps: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "herald_l2_gratuitous_arps_total",
			Help:        "Gratuitous ARP replies sent on taking an IP over or a device coming up.",
			ConstLabels: prometheus.Labels{"node": node},
		}),
	}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.replies
	m.garps.Describe(ch)
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.garps.Collect(ch)
	if m.h.get() == nil {
		return
	}
	entries, err := m.h.get().Entries()
	if err != nil {
		return
	}
	perIf := map[int]uint64{}
	for _, e := range entries {
		perIf[e.Ifindex] += e.ResponsesSent
	}
	for ifindex, n := range perIf {
		ch <- prometheus.MustNewConstMetric(m.replies, prometheus.CounterValue, float64(n), m.node, strconv.Itoa(ifindex))
	}
}
