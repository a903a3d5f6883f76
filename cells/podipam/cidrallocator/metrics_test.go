package cidrallocator

import (
	"strings"
	"testing"

	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heraldlb/herald/tables"
)

func TestPoolMetrics(t *testing.T) {
	db := statedb.New()
	tbl, err := tables.NewPodIPPoolStatusTable(db)
	if err != nil {
		t.Fatal(err)
	}
	wtxn := db.WriteTxn(tbl)
	_, _, _ = tbl.Insert(wtxn, &tables.PodIPPoolStatus{
		Name:      "green",
		IPv4:      &tables.PodPoolFamilyStatus{CIDRsAllocated: 3, CIDRsTotal: "16", AddressesInUse: 40, Nodes: 2},
		IPv6:      &tables.PodPoolFamilyStatus{CIDRsAllocated: 2, CIDRsTotal: "18446744073709551616", AddressesInUse: 40, Nodes: 2},
		Exhausted: "node3 needs 8 more IPv4 addresses",
	})
	wtxn.Commit()

	want := `
# HELP herald_ipam_pool_cidrs Node CIDRs of a CiliumPodIPPool by state: total (how many of maskSize the pool's CIDRs hold; a float, rounded beyond 2^53), allocated (held by nodes).
# TYPE herald_ipam_pool_cidrs gauge
herald_ipam_pool_cidrs{family="ipv4",pool="green",state="allocated"} 3
herald_ipam_pool_cidrs{family="ipv4",pool="green",state="total"} 16
herald_ipam_pool_cidrs{family="ipv6",pool="green",state="allocated"} 2
herald_ipam_pool_cidrs{family="ipv6",pool="green",state="total"} 1.8446744073709552e+19
# HELP herald_ipam_pool_addresses_in_use Pod addresses of a pool in use, as the nodes report them (status.ipam.used of their CiliumNodes).
# TYPE herald_ipam_pool_addresses_in_use gauge
herald_ipam_pool_addresses_in_use{family="ipv4",pool="green"} 40
herald_ipam_pool_addresses_in_use{family="ipv6",pool="green"} 40
`
	c := newCollector(db, tbl)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "herald_ipam_pool_cidrs", "herald_ipam_pool_addresses_in_use"); err != nil {
		t.Error(err)
	}
	problems := `
# HELP herald_ipam_pool_condition 1 while a problem condition of the pool is True (cilium.io/PoolConflict, Exhausted, RemovedCIDRsInUse, Terminating, CIDRClaimedTwice, InvalidSpec), 0 otherwise.
# TYPE herald_ipam_pool_condition gauge
herald_ipam_pool_condition{condition="cilium.io/CIDRClaimedTwice",pool="green"} 0
herald_ipam_pool_condition{condition="cilium.io/Exhausted",pool="green"} 1
herald_ipam_pool_condition{condition="cilium.io/InvalidSpec",pool="green"} 0
herald_ipam_pool_condition{condition="cilium.io/PoolConflict",pool="green"} 0
herald_ipam_pool_condition{condition="cilium.io/RemovedCIDRsInUse",pool="green"} 0
herald_ipam_pool_condition{condition="cilium.io/Terminating",pool="green"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(problems), "herald_ipam_pool_condition"); err != nil {
		t.Error(err)
	}
}
