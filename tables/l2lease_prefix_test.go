package tables

import (
	"testing"

	"github.com/cilium/statedb"
)

// The L2 elector reads node Leases and announcement Leases by name prefix.
func TestL2LeasePrefix(t *testing.T) {
	db := statedb.New()
	tbl, err := NewL2LeasesTable(db)
	if err != nil {
		t.Fatal(err)
	}
	wtxn := db.WriteTxn(tbl)
	for _, n := range []string{L2NodeLeasePrefix + "node1", L2NodeLeasePrefix + "node2", L2AnnounceLeasePrefix + "default-web", "herald-lb-ipam"} {
		_, _, _ = tbl.Insert(wtxn, &L2Lease{Name: n})
	}
	txn := wtxn.Commit()
	for prefix, want := range map[string]int{L2NodeLeasePrefix: 2, L2AnnounceLeasePrefix: 1} {
		got := len(statedb.Collect(tbl.Prefix(txn, L2LeaseNameIndex.Query(prefix))))
		if got != want {
			t.Errorf("prefix %s: %d Leases, want %d", prefix, got, want)
		}
	}
}
