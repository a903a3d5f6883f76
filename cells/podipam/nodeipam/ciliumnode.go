package nodeipam

// The agent's writes to its CiliumNode: creating it, its owner, the
// requested list, releasing CIDRs, and status.ipam.used, which the
// reconciler of ciliumnode-writes makes (writes.go); and the conversions
// between the API's lists and the state's.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/cilium/statedb"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/tables"
)

// createCiliumNode creates the node's CiliumNode, owned by its Node when
// there is one, with the demand as its requested list.
func (a *agent) createCiliumNode(ctx context.Context, txn statedb.ReadTxn, demand []tables.PoolDemand) error {
	api := a.Herald.CiliumV2().CiliumNodes()
	obj := &v2.CiliumNode{ObjectMeta: metav1.ObjectMeta{Name: a.node}}
	if n, _, ok := a.Nodes.Get(txn, tables.NodeNameIndex.Query(a.node)); ok && n.UID != "" {
		// Where kube-controller-manager runs, the CiliumNode goes with
		// its Node; elsewhere the allocator deletes it.
		obj.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: a.node, UID: types.UID(n.UID)}}
	}
	obj.Spec.IPAM.Pools.Requested = requestedK8s(demand)
	// The CIDRs the node's pods still use stay listed: a CiliumNode
	// deleted under a running node (its Node deleted, or by hand) must
	// not leave them to the allocator for another node. The journal
	// proves them; a CIDR another node got meanwhile shows as claimed
	// twice, loudly, on both.
	a.mu.Lock()
	inUse := a.state.inUseCIDRs()
	a.mu.Unlock()
	obj.Spec.IPAM.Pools.Allocated = allocatedK8s(inUse)
	if _, err := api.Create(ctx, obj, metav1.CreateOptions{FieldManager: AgentFieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CiliumNode %s: %w", a.node, err)
	}
	if len(inUse) > 0 {
		a.Log.Warn("Created the CiliumNode again, listing the CIDRs the node's pods still use", "node", a.node, "requested", demand, "allocated", inUse)
	} else {
		a.Log.Info("Created the CiliumNode", "node", a.node, "requested", demand)
	}
	return nil
}

// patchOwner makes the Node of UID uid the owner of the CiliumNode, on
// its version base. A conflict is no error: the next version of the row
// brings us back.
func (a *agent) patchOwner(ctx context.Context, base, uid string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": base,
		"ownerReferences": []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: a.node, UID: types.UID(uid)}},
	}})
	got, err := a.Herald.CiliumV2().CiliumNodes().Patch(ctx, a.node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: AgentFieldManager})
	if err != nil {
		if apierrors.IsConflict(err) {
			return nil
		}
		return fmt.Errorf("CiliumNode %s: owner: %w", a.node, err)
	}
	a.written.record(base, got)
	a.Log.Info("The CiliumNode belongs to its Node again", "node", a.node, "nodeUID", uid)
	return nil
}

// patchRequested writes the demand as the CiliumNode's requested list, on
// its version base.
func (a *agent) patchRequested(ctx context.Context, base string, demand []tables.PoolDemand) error {
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": base},
		"spec":     map[string]any{"ipam": map[string]any{"pools": map[string]any{"requested": requestedK8s(demand)}}},
	})
	got, err := a.Herald.CiliumV2().CiliumNodes().Patch(ctx, a.node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: AgentFieldManager})
	if err != nil {
		if apierrors.IsConflict(err) {
			return nil // the next version of the row brings us back
		}
		return fmt.Errorf("CiliumNode %s: requested: %w", a.node, err)
	}
	a.written.record(base, got)
	a.written.requested(time.Now())
	a.Log.Info("Requested pod addresses", "node", a.node, "requested", demand)
	return nil
}

// releaseUnneeded removes from the CiliumNode (its version base, listing
// allocated) the CIDRs the demand no longer needs. If the write fails the
// state keeps them.
func (a *agent) releaseUnneeded(ctx context.Context, base string, allocated []tables.PoolCIDRs, demand []tables.PoolDemand) error {
	a.mu.Lock()
	release := a.state.releasable(demand, releaseSettle)
	a.mu.Unlock()
	if len(release) == 0 {
		return nil
	}
	keep := without(allocated, release)
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": base},
		"spec":     map[string]any{"ipam": map[string]any{"pools": map[string]any{"allocated": allocatedK8s(keep)}}},
	})
	got, err := a.Herald.CiliumV2().CiliumNodes().Patch(ctx, a.node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: AgentFieldManager})
	if err != nil {
		a.mu.Lock()
		a.state.keep(release)
		a.mu.Unlock()
		if apierrors.IsConflict(err) {
			return nil
		}
		return fmt.Errorf("CiliumNode %s: releasing %v: %w", a.node, release, err)
	}
	a.written.record(base, got)
	a.Log.Info("Released pod CIDRs the node no longer needs", "node", a.node, "cidrs", release)
	return nil
}

// ownWrite is what the writer tells the sync job: the CiliumNode as its
// last write left it and the version that write was made on, when it last
// requested addresses, and the error of its last spec write. The writer
// (the reconciler) and the sync job run apart.
type ownWrite struct {
	mu          sync.Mutex
	base        string
	result      *tables.CiliumNode
	lastRequest time.Time
	err         error
}

// record remembers a write made on version base.
func (w *ownWrite) record(base string, result *v2.CiliumNode) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.base, w.result = base, tables.CiliumNodeFromK8s(result)
}

// current is the newer of the row and the agent's own last write: the
// write's result while the row is still the version it was made on.
// Nothing but the agent's write can lie between the two: the write was
// conditional on that version.
func (w *ownWrite) current(row *tables.CiliumNode) *tables.CiliumNode {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.result != nil && row.ResourceVersion == w.base {
		return w.result
	}
	return row
}

// requested remembers when requested was last written (requestEvery).
func (w *ownWrite) requested(at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastRequest = at
}

func (w *ownWrite) sinceRequest() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastRequest
}

// setErr remembers the outcome of the last spec write (the sync job's
// health).
func (w *ownWrite) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

func (w *ownWrite) lastErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// usedMap renders status.ipam.used: every address in use, owner
// "namespace/pod", resource its pool.
func (a *agent) usedMap() map[string]v2.AllocationIP {
	out := map[string]v2.AllocationIP{}
	for ip, e := range a.state.allocs {
		out[ip.String()] = v2.AllocationIP{Owner: e.Pod.Namespace + "/" + e.Pod.Name, Resource: e.Pool}
	}
	for ip, e := range a.state.orphans {
		out[ip.String()] = v2.AllocationIP{Owner: e.Pod.Namespace + "/" + e.Pod.Name, Resource: e.Pool}
	}
	return out
}

// writeUsed applies status.ipam.used with server-side apply: the agent owns
// that map, and keys it leaves out are removed. An empty map is removed
// with a merge patch instead: applying an empty map (or none) leaves a null
// behind, which the schema refuses.
func (a *agent) writeUsed(ctx context.Context, used map[string]v2.AllocationIP) error {
	if len(used) == 0 {
		_, err := a.Herald.CiliumV2().CiliumNodes().Patch(ctx, a.node, types.MergePatchType,
			[]byte(`{"status":{"ipam":{"used":null}}}`), metav1.PatchOptions{FieldManager: AgentFieldManager}, "status")
		return err
	}
	body, _ := json.Marshal(map[string]any{
		"apiVersion": v2.SchemeGroupVersion.String(), "kind": "CiliumNode",
		"metadata": map[string]any{"name": a.node},
		"status":   map[string]any{"ipam": map[string]any{"used": used}},
	})
	force := true
	_, err := a.Herald.CiliumV2().CiliumNodes().Patch(ctx, a.node, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: AgentFieldManager, Force: &force}, "status")
	return err
}

func requestedK8s(ds []tables.PoolDemand) []v2.IPAMPoolRequest {
	out := []v2.IPAMPoolRequest{}
	for _, d := range ds {
		out = append(out, v2.IPAMPoolRequest{Pool: d.Pool, Needed: v2.IPAMPoolDemand{IPv4Addrs: d.IPv4, IPv6Addrs: d.IPv6}})
	}
	return out
}

func allocatedK8s(as []tables.PoolCIDRs) []v2.IPAMPoolAllocation {
	out := []v2.IPAMPoolAllocation{}
	for _, a := range as {
		if len(a.CIDRs) == 0 {
			continue
		}
		x := v2.IPAMPoolAllocation{Pool: a.Pool}
		for _, c := range a.CIDRs {
			x.CIDRs = append(x.CIDRs, v2.IPAMPodCIDR(c.String()))
		}
		out = append(out, x)
	}
	return out
}

func without(have, drop []tables.PoolCIDRs) []tables.PoolCIDRs {
	gone := map[netip.Prefix]bool{}
	for _, d := range drop {
		for _, c := range d.CIDRs {
			gone[c] = true
		}
	}
	var out []tables.PoolCIDRs
	for _, a := range have {
		x := tables.PoolCIDRs{Pool: a.Pool}
		for _, c := range a.CIDRs {
			if !gone[c] {
				x.CIDRs = append(x.CIDRs, c)
			}
		}
		out = append(out, x)
	}
	return out
}

func sameDemand(a, b []tables.PoolDemand) bool {
	norm := func(ds []tables.PoolDemand) []tables.PoolDemand {
		out := slices.DeleteFunc(slices.Clone(ds), func(d tables.PoolDemand) bool { return d.IPv4 == 0 && d.IPv6 == 0 })
		slices.SortFunc(out, func(x, y tables.PoolDemand) int {
			if x.Pool < y.Pool {
				return -1
			}
			if x.Pool > y.Pool {
				return 1
			}
			return 0
		})
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

func sameAllocated(a, b []tables.PoolCIDRs) bool {
	return slices.EqualFunc(a, b, func(x, y tables.PoolCIDRs) bool { return x.Pool == y.Pool && slices.Equal(x.CIDRs, y.CIDRs) })
}

func countCIDRs(as []tables.PoolCIDRs) int {
	n := 0
	for _, a := range as {
		n += len(a.CIDRs)
	}
	return n
}
