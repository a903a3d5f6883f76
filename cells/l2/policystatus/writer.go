package policystatus

import (
	"context"
	"iter"
	"log/slog"
	"time"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/tables"
)

// statusWriter patches a policy's status when its conditions should change.
type statusWriter struct {
	client   versioned.Interface
	policies statedb.Table[*tables.L2Policy]
	log      *slog.Logger
	now      func() time.Time
}

func (w *statusWriter) Update(ctx context.Context, txn statedb.ReadTxn, _ statedb.Revision, s *tables.L2PolicyStatus) error {
	pol, _, ok := w.policies.Get(txn, tables.L2PolicyNameIndex.Query(s.Policy))
	if !ok || pol.UID != s.UID {
		return nil // gone or replaced: its own row follows
	}
	want, changed := policyConditions(pol, w.now())
	if !changed {
		return nil
	}
	if err := patchPolicyStatus(ctx, w.client, pol, want); err != nil {
		return err
	}
	if pol.Broken() {
		w.log.Warn("Invalid CiliumL2AnnouncementPolicy: it selects nothing until fixed", "policy", pol.Name,
			"serviceSelector", pol.ServiceSelectorError, "nodeSelector", pol.NodeSelectorError, "interfaces", pol.InterfaceError)
	}
	return nil
}

// Delete: the policy is gone, and its status with it.
func (w *statusWriter) Delete(context.Context, statedb.ReadTxn, statedb.Revision, *tables.L2PolicyStatus) error {
	return nil
}

// Prune: nothing outside the table to remove.
func (w *statusWriter) Prune(context.Context, statedb.ReadTxn, iter.Seq2[*tables.L2PolicyStatus, statedb.Revision]) error {
	return nil
}
