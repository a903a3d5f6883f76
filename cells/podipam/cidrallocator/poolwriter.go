package cidrallocator

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"slices"
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

// poolWriter writes a pool's status and keeps its finalizer while nodes
// hold CIDRs of it.
type poolWriter struct {
	fence  leader.WriteFence
	client versioned.Interface
	pools  statedb.Table[*tables.PodIPPool]
	events record.EventRecorder
	log    *slog.Logger
	now    func() time.Time
}

func (w *poolWriter) Update(ctx context.Context, txn statedb.ReadTxn, _ statedb.Revision, st *tables.PodIPPoolStatus) error {
	pool, _, ok := w.pools.Get(txn, tables.PodIPPoolNameIndex.Query(st.Name))
	if !ok || pool.UID != st.UID {
		return nil
	}
	wctx, cancel, err := w.fence(ctx, st.Term)
	if err != nil {
		return fmt.Errorf("CiliumPodIPPool %s: %w", st.Name, err)
	}
	defer cancel()
	api := w.client.CiliumV2alpha1().CiliumPodIPPools()

	// The finalizer first, conditional on the pool's version: other
	// finalizers in the list are kept as they are.
	if st.InUse != pool.HasFinalizer() {
		fs := slices.DeleteFunc(slices.Clone(pool.Finalizers), func(f string) bool { return f == tables.PodIPPoolFinalizer })
		if st.InUse {
			fs = append(fs, tables.PodIPPoolFinalizer)
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": pool.ResourceVersion, "finalizers": fs}})
		if _, err := api.Patch(wctx, st.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: tables.HeraldFieldManager}); err != nil {
			return fmt.Errorf("CiliumPodIPPool %s: finalizer: %w", st.Name, err)
		}
		if !st.InUse && pool.Deleting {
			w.log.Info("No node holds CIDRs of the pool any more: it can go", "pool", st.Name)
			w.events.Event(poolRef(pool), corev1.EventTypeNormal, EventPoolReleased, "No node holds CIDRs of the pool any more: its deletion completes")
		}
	}

	want := desiredPoolConditions(st, pool.Conditions, pool.Generation, w.now())
	if !samePoolConditions(want, pool.Conditions) || !sameCounts(st.IPv4, pool.StatusIPv4) || !sameCounts(st.IPv6, pool.StatusIPv6) {
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"uid": pool.UID},
			"status":   map[string]any{"conditions": want, "ipv4": countsJSON(st.IPv4), "ipv6": countsJSON(st.IPv6)},
		})
		if _, err := api.Patch(wctx, st.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: tables.HeraldFieldManager}, "status"); err != nil {
			return fmt.Errorf("CiliumPodIPPool %s: status: %w", st.Name, err)
		}
		w.recordEvents(st, pool)
	}
	return nil
}

// EventPoolReleased is the Normal Event on a pool being deleted once no
// node holds its CIDRs any more.
const EventPoolReleased = "PoolReleased"

func poolRef(pool *tables.PodIPPool) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "CiliumPodIPPool", APIVersion: "cilium.io/v2alpha1", Name: pool.Name, UID: types.UID(pool.UID)}
}

// recordEvents says, once per new message, what went wrong with the pool.
func (w *poolWriter) recordEvents(st *tables.PodIPPoolStatus, pool *tables.PodIPPool) {
	r := poolRef(pool)
	for _, c := range poolProblems(st) {
		if c.msg == "" {
			continue
		}
		if old, ok := condition(pool.Conditions, c.typ); ok && old.Status == metav1.ConditionTrue && old.Message == c.msg {
			continue
		}
		w.events.Event(r, corev1.EventTypeWarning, c.reason, c.msg)
		w.log.Warn("CiliumPodIPPool problem", "pool", pool.Name, "condition", c.typ, "message", c.msg)
	}
}

func sameCounts(a, b *tables.PodPoolFamilyStatus) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func countsJSON(s *tables.PodPoolFamilyStatus) any {
	if s == nil {
		return nil
	}
	return s
}

func (w *poolWriter) Delete(context.Context, statedb.ReadTxn, statedb.Revision, *tables.PodIPPoolStatus) error {
	return nil
}

func (w *poolWriter) Prune(context.Context, statedb.ReadTxn, iter.Seq2[*tables.PodIPPoolStatus, statedb.Revision]) error {
	return nil
}
