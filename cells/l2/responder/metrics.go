package responder

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the responder: replies are read from the BPF maps' counters
// at scrape time; announcements are counted as they are sent.
type metrics struct {
	h              *handle
	node           string
	replies        *prometheus.Desc // ARP, IPv4 entries
	replies6       *prometheus.Desc // Neighbor Advertisements, IPv6 entries
	garps          prometheus.Counter
	unsolicitedNAs prometheus.Counter
}

func newMetrics(h *handle, node string) *metrics {
	return &metrics{
		h: h, node: node,
		replies: prometheus.NewDesc("herald_l2_arp_replies_total",
			"ARP replies the eBPF responder sent, by interface (the responses_sent counters of l2_responder_v4).",
			[]string{"node", "ifindex"}, nil),
		replies6: prometheus.NewDesc("herald_l2_neighbor_advertisements_total",
			"Neighbor Advertisements the eBPF responder sent in answer to solicitations, by interface (the responses_sent counters of l2_responder_v6).",
			[]string{"node", "ifindex"}, nil),
		unsolicitedNAs: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "herald_l2_unsolicited_neighbor_advertisements_total",
			Help:        "Unsolicited Neighbor Advertisements sent on taking an IPv6 address over or a device coming up.",
			ConstLabels: prometheus.Labels{"node": node},
		}),
		garps: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "herald_l2_gratuitous_arps_total",
			Help:        "Gratuitous ARP replies sent on taking an IP over or a device coming up.",
			ConstLabels: prometheus.Labels{"node": node},
		}),
	}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.replies
	ch <- m.replies6
	m.garps.Describe(ch)
	m.unsolicitedNAs.Describe(ch)
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.garps.Collect(ch)
	m.unsolicitedNAs.Collect(ch)
	if m.h.get() == nil {
		return
	}
	entries, err := m.h.get().Entries()
	if err != nil {
		return
	}
	perIf := map[*prometheus.Desc]map[int]uint64{m.replies: {}, m.replies6: {}}
	for _, e := range entries {
		d := m.replies
		if e.IP.Is6() {
			d = m.replies6
		}
		perIf[d][e.Ifindex] += e.ResponsesSent
	}
	for d, counts := range perIf {
		for ifindex, n := range counts {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(n), m.node, strconv.Itoa(ifindex))
		}
	}
}
