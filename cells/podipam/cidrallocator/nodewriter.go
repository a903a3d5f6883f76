package cidrallocator

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"slices"

	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
)

// Event reasons on CiliumNodes.
const (
	EventCIDRAllocated    = "PodCIDRAllocated"
	EventAllocationFailed = "PodCIDRAllocationFailed"
)

// nodeWriter applies the allocator's decisions to the CiliumNodes.
type nodeWriter struct {
	fence  leader.WriteFence
	client versioned.Interface
	nodes  statedb.Table[*tables.CiliumNode]
	events record.EventRecorder
	log    *slog.Logger
}

func (w *nodeWriter) Update(ctx context.Context, txn statedb.ReadTxn, _ statedb.Revision, d *tables.PodCIDRDecision) error {
	cn, _, ok := w.nodes.Get(txn, tables.CiliumNodeNameIndex.Query(d.Node))
	if !ok || cn.UID != d.UID {
		return nil // gone or replaced: the allocator decides again
	}
	wctx, cancel, err := w.fence(ctx, d.Term)
	if err != nil {
		return fmt.Errorf("CiliumNode %s: %w", d.Node, err)
	}
	defer cancel()
	api := w.client.CiliumV2().CiliumNodes()

	if d.Delete {
		err := api.Delete(wctx, d.Node, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr(types.UID(d.UID)), ResourceVersion: &cn.ResourceVersion}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting CiliumNode %s: %w", d.Node, err)
		}
		w.log.Info("Deleted a CiliumNode whose Node is gone: its pod CIDRs are free", "node", d.Node, "allocated", cn.Allocated)
		return nil
	}

	if full, added := merged(cn.Allocated, d.Add); len(added) > 0 {
		// A merge patch replaces the list as a whole: conditional on the
		// version it was computed from, so a release by the node's agent
		// in between is never undone.
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": cn.ResourceVersion},
			"spec":     map[string]any{"ipam": map[string]any{"pools": map[string]any{"allocated": allocatedJSON(full)}}},
		})
		if _, err := api.Patch(wctx, d.Node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: tables.HeraldFieldManager}); err != nil {
			return fmt.Errorf("CiliumNode %s: adding %v: %w", d.Node, added, err)
		}
		for _, a := range added {
			w.log.Info("Allocated a pod CIDR", "node", d.Node, "pool", a.Pool, "cidrs", a.CIDRs)
			w.events.Eventf(ref(cn), corev1.EventTypeNormal, EventCIDRAllocated, "Allocated %v from pool %s", a.CIDRs, a.Pool)
		}
	}

	if d.Error != cn.OperatorError {
		var value any = d.Error
		if d.Error == "" {
			value = nil // removes the field
		}
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"uid": cn.UID},
			"status":   map[string]any{"ipam": map[string]any{"operator-status": map[string]any{"error": value}}},
		})
		if _, err := api.Patch(wctx, d.Node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: tables.HeraldFieldManager}, "status"); err != nil {
			return fmt.Errorf("CiliumNode %s: operator-status: %w", d.Node, err)
		}
		if d.Error != "" {
			w.log.Warn("Cannot give a node the pod CIDRs it asks for", "node", d.Node, "error", d.Error)
			w.events.Event(ref(cn), corev1.EventTypeWarning, EventAllocationFailed, d.Error)
		}
	}
	return nil
}

// merged returns the node's allocation list with the decision's CIDRs
// added, and what was missing.
func merged(have, add []tables.PoolCIDRs) (full, added []tables.PoolCIDRs) {
	full = make([]tables.PoolCIDRs, len(have))
	for i, a := range have {
		full[i] = tables.PoolCIDRs{Pool: a.Pool, CIDRs: slices.Clone(a.CIDRs)}
	}
	for _, a := range add {
		for _, c := range a.CIDRs {
			i := slices.IndexFunc(full, func(x tables.PoolCIDRs) bool { return x.Pool == a.Pool })
			if i < 0 {
				full = append(full, tables.PoolCIDRs{Pool: a.Pool})
				i = len(full) - 1
			}
			if slices.Contains(full[i].CIDRs, c) {
				continue
			}
			full[i].CIDRs = append(full[i].CIDRs, c)
			added = addTo(added, a.Pool, c)
		}
	}
	return full, added
}

func allocatedJSON(as []tables.PoolCIDRs) []map[string]any {
	out := []map[string]any{}
	for _, a := range as {
		cs := make([]string, len(a.CIDRs))
		for i, c := range a.CIDRs {
			cs[i] = c.String()
		}
		out = append(out, map[string]any{"pool": a.Pool, "cidrs": cs})
	}
	return out
}

func ref(cn *tables.CiliumNode) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "CiliumNode", APIVersion: "cilium.io/v2", Name: cn.Name, UID: types.UID(cn.UID)}
}

func ptr[T any](v T) *T { return &v }

// Delete runs when a decision goes (the CiliumNode is gone): nothing left.
func (w *nodeWriter) Delete(context.Context, statedb.ReadTxn, statedb.Revision, *tables.PodCIDRDecision) error {
	return nil
}

func (w *nodeWriter) Prune(context.Context, statedb.ReadTxn, iter.Seq2[*tables.PodCIDRDecision, statedb.Revision]) error {
	return nil
}
