package k8sreflect

import (
	"log/slog"
	"testing"

	"github.com/cilium/statedb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// TestEqualRowsAreNotRewritten: for a kind that defines Equal, an update
// that changes nothing in the row writes nothing (the table's readers are
// not woken), one that changes it is written, and a row a list saw
// unchanged is not taken for deleted when the list ends. Without Equal,
// every update is written.
func TestEqualRowsAreNotRewritten(t *testing.T) {
	config := func(owner, rv string) *v2alpha1.CiliumBGPNodeConfig {
		return &v2alpha1.CiliumBGPNodeConfig{ObjectMeta: metav1.ObjectMeta{Name: "node1", ResourceVersion: rv,
			Annotations: map[string]string{tables.BGPClusterConfigAnnotation: owner}}}
	}
	update := func(c *v2alpha1.CiliumBGPNodeConfig) []pendingEvent[*v2alpha1.CiliumBGPNodeConfig] {
		return []pendingEvent[*v2alpha1.CiliumBGPNodeConfig]{{obj: c}}
	}
	for _, withEqual := range []bool{true, false} {
		db := statedb.New()
		tbl, err := tables.NewBGPNodeOwnersTable(db)
		if err != nil {
			t.Fatal(err)
		}
		r := &reflector[*v2alpha1.CiliumBGPNodeConfig, *tables.BGPNodeOwner]{
			name: "bgp-node-owners", db: db, table: tbl, log: slog.New(slog.DiscardHandler), transform: tables.BGPNodeOwnerFromK8s,
		}
		if withEqual {
			r.equal = func(a, b *tables.BGPNodeOwner) bool { return *a == *b }
		}
		revision := func() statedb.Revision {
			_, rev, ok := tbl.Get(db.ReadTxn(), tables.BGPNodeOwnerNodeIndex.Query("node1"))
			if !ok {
				t.Fatalf("equal %v: no row for node1", withEqual)
			}
			return rev
		}

		r.write(update(config("main", "1")))
		first := revision()
		r.write(update(config("main", "2"))) // a status write: the owner stays
		if got := revision(); (got == first) != withEqual {
			t.Errorf("equal %v: an update that changes nothing in the row: revision %d, before %d", withEqual, got, first)
		}
		before := revision()
		r.write(update(config("other", "3")))
		if got := revision(); got == before {
			t.Errorf("equal %v: an update that changes the row was not written", withEqual)
		}
		r.write([]pendingEvent[*v2alpha1.CiliumBGPNodeConfig]{{relist: true}, {obj: config("other", "4")}, {listed: true}})
		if o, _, ok := tbl.Get(db.ReadTxn(), tables.BGPNodeOwnerNodeIndex.Query("node1")); !ok || o.ClusterConfig != "other" {
			t.Errorf("equal %v: after a list that saw the row unchanged: %+v, %v", withEqual, o, ok)
		}
	}
}
