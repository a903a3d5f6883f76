package poolstatus

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"time"

	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
)

// Event reasons on pools.
const (
	EventConflict        = "PoolConflict"
	EventExhausted       = "PoolExhausted"
	EventInvalidSelector = "InvalidServiceSelector"
	EventInvalidBlocks   = "InvalidBlocks"
	// EventInvalidAnnotations: the pool choice annotations do not parse.
	EventInvalidAnnotations = "InvalidAnnotations"
)

type statusWriter struct {
	fence  leader.WriteFence
	log    *slog.Logger
	client versioned.Interface
	pools  statedb.Table[*tables.LBPool]
	events record.EventRecorder
	now    func() time.Time
}

func (w *statusWriter) Update(ctx context.Context, txn statedb.ReadTxn, _ statedb.Revision, st *tables.LBPoolStatus) error {
	pool, _, ok := w.pools.Get(txn, tables.LBPoolNameIndex.Query(st.Name))
	if !ok {
		return nil // deleted meanwhile
	}
	want := desiredConditions(st, pool.Conditions, w.now())
	if sameConditions(want, pool.Conditions) {
		return nil
	}
	// Herald is the only writer of these conditions; a merge patch of the
	// whole list, guarded by the UID and the resourceVersion it was
	// computed from, is enough.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pool.UID, "resourceVersion": pool.ResourceVersion},
		"status":   map[string]any{"conditions": want},
	})
	if err != nil {
		return err
	}
	wctx, cancel, err := w.fence(ctx, st.Term)
	if err != nil {
		return fmt.Errorf("pool %s: %w", st.Name, err)
	}
	defer cancel()
	_, err = w.client.CiliumV2alpha1().CiliumLoadBalancerIPPools().Patch(wctx, st.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: tables.HeraldFieldManager}, "status")
	if err != nil {
		return fmt.Errorf("pool %s: %w", st.Name, err)
	}
	w.recordEvents(st, pool)
	return nil
}

func (w *statusWriter) recordEvents(st *tables.LBPoolStatus, pool *tables.LBPool) {
	ref := &corev1.ObjectReference{
		Kind: "CiliumLoadBalancerIPPool", APIVersion: "cilium.io/v2alpha1", Name: pool.Name, UID: types.UID(pool.UID),
	}
	old, _ := pool.Condition(tables.ConditionPoolConflict)
	if st.Conflicting && (old.Status != metav1.ConditionTrue || old.Message != st.ConflictMessage) {
		w.events.Event(ref, corev1.EventTypeWarning, EventConflict, st.ConflictMessage+"; no new IPs are allocated from this pool")
	}
	for _, m := range []struct{ typ, reason, what, err string }{
		{tables.ConditionPoolBadServiceSelector, EventInvalidSelector, "serviceSelector is invalid, the pool selects no Service", st.SelectorError},
		{tables.ConditionPoolBadBlocks, EventInvalidBlocks, "blocks are invalid and ignored", strings.Join(st.BlockErrors, "; ")},
		{tables.ConditionPoolBadAnnotations, EventInvalidAnnotations, "annotations are invalid", st.ChoiceError},
	} {
		if m.err == "" {
			continue
		}
		if old, _ := pool.Condition(m.typ); old.Status != metav1.ConditionTrue || !strings.HasPrefix(old.Message, m.err) {
			w.events.Event(ref, corev1.EventTypeWarning, m.reason, m.err)
			w.log.Warn("Pool "+m.what, "pool", pool.Name, "error", m.err)
		}
	}
	oldAvail, _ := pool.Condition(tables.ConditionIPsAvailable)
	if st.Available == "0" && st.Total != "0" && oldAvail.Message != "0" {
		w.events.Eventf(ref, corev1.EventTypeWarning, EventExhausted, "All %s IPs of the pool are in use", st.Total)
	}
}

func (w *statusWriter) Delete(context.Context, statedb.ReadTxn, statedb.Revision, *tables.LBPoolStatus) error {
	return nil // the pool is gone with its status
}

func (w *statusWriter) Prune(context.Context, statedb.ReadTxn, iter.Seq2[*tables.LBPoolStatus, statedb.Revision]) error {
	return nil
}
