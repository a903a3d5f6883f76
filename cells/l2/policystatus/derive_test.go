package policystatus

import (
	"testing"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// A row is rewritten, and so reconciled again, only when what the status
// should say changes; a deleted policy loses its row.
func TestDeriveRows(t *testing.T) {
	db := statedb.New()
	status, err := tables.NewL2PolicyStatusTable(db)
	if err != nil {
		t.Fatal(err)
	}
	broken := policy("p", v2alpha1.CiliumL2AnnouncementPolicySpec{Interfaces: []string{"eth[0-"}})
	broken.UID, broken.Generation = "u1", 1
	step := func(p *tables.L2Policy, deleted bool) (*tables.L2PolicyStatus, statedb.Revision, bool) {
		wtxn := db.WriteTxn(status)
		apply(status, wtxn, statedb.Change[*tables.L2Policy]{Object: p, Deleted: deleted})
		txn := wtxn.Commit()
		return status.Get(txn, tables.L2PolicyStatusIndex.Query("p"))
	}
	row, rev, ok := step(broken, false)
	if !ok || row.InterfaceError == "" || row.Status.Kind != reconciler.StatusKindPending {
		t.Fatalf("broken policy: row %+v (found %v), want its interface error, pending", row, ok)
	}
	// Done by the reconciler; the same policy again (a label edit) leaves
	// the row alone.
	wtxn := db.WriteTxn(status)
	_, _, _ = status.Insert(wtxn, row.Clone().SetStatus(reconciler.StatusDone()))
	wtxn.Commit()
	_, rev, _ = status.Get(db.ReadTxn(), tables.L2PolicyStatusIndex.Query("p"))
	if _, again, _ := step(broken, false); again != rev {
		t.Fatalf("unchanged policy rewrote its row")
	}
	fixed := policy("p", v2alpha1.CiliumL2AnnouncementPolicySpec{Interfaces: []string{"eth[0-9]"}})
	fixed.UID, fixed.Generation = "u1", 2
	if row, _, _ := step(fixed, false); row.InterfaceError != "" || row.Status.Kind != reconciler.StatusKindPending {
		t.Fatalf("fixed policy: row %+v, want no error, pending", row)
	}
	if _, _, ok := step(fixed, true); ok {
		t.Fatalf("deleted policy kept its row")
	}
}
