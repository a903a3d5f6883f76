package allocator

import (
	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/tables"
)

// collector exports LB IPAM's state at scrape time, straight from the
// tables, so the figures are never out of step with what the leader
// decided. Agents that do not lead export no series.
type collector struct {
	db       *statedb.DB
	status   statedb.Table[*tables.LBPoolStatus]
	allocs   statedb.Table[*tables.LBAllocation]
	poolIPs  *prometheus.Desc
	conflict *prometheus.Desc
	pending  *prometheus.Desc
}

func newCollector(db *statedb.DB, status statedb.Table[*tables.LBPoolStatus], allocs statedb.Table[*tables.LBAllocation]) *collector {
	return &collector{
		db: db, status: status, allocs: allocs,
		poolIPs: prometheus.NewDesc("herald_lbipam_pool_ips",
			"IPs of a pool by state (total, used, available). A float: exact up to 2^53, so a /64's count is rounded.",
			[]string{"pool", "state"}, nil),
		conflict: prometheus.NewDesc("herald_lbipam_pool_conflicting",
			"1 while the pool overlaps an older pool (or itself) and hands out nothing new.",
			[]string{"pool"}, nil),
		pending: prometheus.NewDesc("herald_lbipam_services_unsatisfied",
			"Services whose LB IPAM request is not satisfied, by reason.",
			[]string{"reason"}, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.poolIPs
	ch <- c.conflict
	ch <- c.pending
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	txn := c.db.ReadTxn()
	for st := range c.status.All(txn) {
		for state, v := range map[string]string{"total": st.Total, "used": st.Used, "available": st.Available} {
			ch <- prometheus.MustNewConstMetric(c.poolIPs, prometheus.GaugeValue, tables.CountFloat(v), st.Name, state)
		}
		conflicting := 0.0
		if st.Conflicting {
			conflicting = 1
		}
		ch <- prometheus.MustNewConstMetric(c.conflict, prometheus.GaugeValue, conflicting, st.Name)
	}
	byReason := map[string]int{}
	for a := range c.allocs.All(txn) {
		if a.Managed && !a.Satisfied {
			byReason[a.Reason]++
		}
	}
	for reason, n := range byReason {
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(n), reason)
	}
}
