package cidrallocator

import (
	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/tables"
)

// collector exports the pools' status at scrape time, straight from the
// table the leader computes it into: only the holder of herald-pod-ipam
// exports these series (the table is empty on the others).
type collector struct {
	db      *statedb.DB
	status  statedb.Table[*tables.PodIPPoolStatus]
	cidrs   *prometheus.Desc
	inUse   *prometheus.Desc
	nodes   *prometheus.Desc
	problem *prometheus.Desc
}

func newCollector(db *statedb.DB, status statedb.Table[*tables.PodIPPoolStatus]) *collector {
	return &collector{
		db: db, status: status,
		cidrs: prometheus.NewDesc("herald_ipam_pool_cidrs",
			"Node CIDRs of a CiliumPodIPPool by state: total (how many of maskSize the pool's CIDRs hold; a float, rounded beyond 2^53), allocated (held by nodes).",
			[]string{"pool", "family", "state"}, nil),
		inUse: prometheus.NewDesc("herald_ipam_pool_addresses_in_use",
			"Pod addresses of a pool in use, as the nodes report them (status.ipam.used of their CiliumNodes).",
			[]string{"pool", "family"}, nil),
		nodes: prometheus.NewDesc("herald_ipam_pool_nodes",
			"Nodes holding a CIDR of the pool.",
			[]string{"pool", "family"}, nil),
		problem: prometheus.NewDesc("herald_ipam_pool_condition",
			"1 while a problem condition of the pool is True (cilium.io/PoolConflict, Exhausted, RemovedCIDRsInUse, Terminating, CIDRClaimedTwice, InvalidSpec), 0 otherwise.",
			[]string{"pool", "condition"}, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.cidrs
	ch <- c.inUse
	ch <- c.nodes
	ch <- c.problem
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for st := range c.status.All(c.db.ReadTxn()) {
		for fam, f := range map[string]*tables.PodPoolFamilyStatus{"ipv4": st.IPv4, "ipv6": st.IPv6} {
			if f == nil {
				continue
			}
			ch <- prometheus.MustNewConstMetric(c.cidrs, prometheus.GaugeValue, tables.CountFloat(f.CIDRsTotal), st.Name, fam, "total")
			ch <- prometheus.MustNewConstMetric(c.cidrs, prometheus.GaugeValue, float64(f.CIDRsAllocated), st.Name, fam, "allocated")
			ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(f.AddressesInUse), st.Name, fam)
			ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(f.Nodes), st.Name, fam)
		}
		for cond, msg := range map[string]string{
			tables.ConditionPodPoolConflict: st.Conflict, tables.ConditionPodPoolExhausted: st.Exhausted,
			tables.ConditionPodPoolRemovedInUse: st.RemovedInUse, tables.ConditionPodPoolTerminating: st.Terminating,
			tables.ConditionPodPoolClaimedTwice: st.ClaimedTwice, tables.ConditionPodPoolInvalidSpec: st.InvalidSpec,
		} {
			v := 0.0
			if msg != "" {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.problem, prometheus.GaugeValue, v, st.Name, cond)
		}
	}
}
