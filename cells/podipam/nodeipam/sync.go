package nodeipam

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/tables"
)

// usedEvery bounds how often status.ipam.used is written: a burst of pods
// becomes one write.
const usedEvery = 2 * time.Second

// requestEvery bounds how often requested grows while no ADD waits (the
// pre-allocation keeps ahead of the pods: a burst of pods becomes one
// write). An ADD that waits for a CIDR is asked for at once.
const requestEvery = time.Second

// AgentFieldManager owns what a node's agent writes in its CiliumNode's
// status (the addresses in use); the allocator writes as "herald".
const AgentFieldManager = "herald-agent"

// syncLoop keeps the node's CiliumNode and the state in step: the CIDRs it
// lists become the state's, the state's demand becomes its requested list,
// CIDRs the node no longer needs leave it, and the addresses in use are
// listed in its status.
func (a *agent) syncLoop(ctx context.Context, health cell.Health) error {
	if err := a.waitTables(ctx); err != nil {
		return nil
	}
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	var (
		lastAllocated []tables.PoolCIDRs
		seen          bool
		poolsRevision = ^statedb.Revision(0) // none seen yet
		operatorError string
		lastUsedWrite time.Time
		usedTimer     <-chan time.Time
		requestTimer  <-chan time.Time
	)
	health.OK("waiting for the CiliumNode")
	for {
		txn := a.DB.ReadTxn()
		cn, _, cnWatch, found := a.CiliumNodes.GetWatch(txn, tables.CiliumNodeNameIndex.Query(a.node))
		_, poolsWatch := a.Pools.AllWatch(txn)
		if rev := a.Pools.Revision(txn); rev != poolsRevision {
			a.syncPools(txn)
			poolsRevision = rev
		}
		if found && (!seen || !sameAllocated(cn.Allocated, lastAllocated)) {
			a.takeAllocated(cn.Allocated)
			lastAllocated, seen = cn.Allocated, true
		}
		if found && cn.OperatorError != operatorError {
			a.mu.Lock()
			a.state.setShortfalls(tables.ParsePodCIDRShortfalls(cn.OperatorError))
			a.mu.Unlock()
			operatorError = cn.OperatorError
		}
		later, err := a.syncOnce(ctx, txn, cn, found)
		switch {
		case err != nil:
			health.Degraded("cannot update the CiliumNode", err)
			a.Log.Warn("Updating the CiliumNode failed; retrying", "node", a.node, "error", err)
		case found:
			health.OK(fmt.Sprintf("%d CIDRs", countCIDRs(cn.Allocated)))
		}
		if later > 0 && requestTimer == nil {
			requestTimer = time.After(later)
		}
		lastUsedWrite, usedTimer = a.syncUsed(ctx, cn, found, lastUsedWrite, usedTimer)

		select {
		case <-ctx.Done():
			return nil
		case <-cnWatch:
		case <-poolsWatch:
		case <-a.kick:
		case <-tick.C:
		case <-usedTimer:
			usedTimer = nil
		case <-requestTimer:
			requestTimer = nil
		}
	}
}

// takeAllocated makes the CIDRs the CiliumNode lists the state's. A CIDR
// that left it while pods use it is logged: they keep their addresses.
func (a *agent) takeAllocated(allocated []tables.PoolCIDRs) {
	a.mu.Lock()
	gone := a.state.setCIDRs(allocated)
	a.publishAllLocked()
	a.mu.Unlock()
	a.dropGateways()
	for _, g := range gone {
		a.Log.Error("A pod CIDR left the CiliumNode while pods use it; they keep their addresses, nothing new comes from it", "node", a.node, "cidr", g)
	}
}

// syncUsed writes status.ipam.used when it differs from the addresses in
// use, at most once per usedEvery: a write that comes too soon is left
// to timer (started if not running). It returns the time of the last
// write and the timer.
//
// status.ipam.used is compared with what the CiliumNode lists, not with
// what this run last wrote: after a restart, or a write of someone else,
// it still ends up exact (down to empty).
//
// Within usedEvery of the last write nothing is compared: the map and its
// digest cost time in the number of addresses in use, under the lock every
// ADD takes, and the loop runs after every ADD. The timer compares then.
func (a *agent) syncUsed(ctx context.Context, cn *tables.CiliumNode, found bool, lastWrite time.Time, timer <-chan time.Time) (time.Time, <-chan time.Time) {
	if !found {
		return lastWrite, timer
	}
	if wait := time.Until(lastWrite.Add(usedEvery)); wait > 0 {
		if timer == nil {
			timer = time.After(wait)
		}
		return lastWrite, timer
	}
	a.mu.Lock()
	used := a.usedMap()
	a.mu.Unlock()
	if tables.UsedDigest(used) != cn.UsedDigest {
		if err := a.writeUsed(ctx, used); err != nil {
			a.Log.Warn("Writing the addresses in use to the CiliumNode failed; retrying", "node", a.node, "error", err)
		} else {
			lastWrite, timer = time.Now(), nil
		}
	}
	return lastWrite, timer
}

// syncPools gives the state the current pools: CIDRs whose pool no
// longer has them drain.
func (a *agent) syncPools(txn statedb.ReadTxn) {
	pools := map[string]*tables.PodIPPool{}
	for p := range a.Pools.All(txn) {
		pools[p.Name] = p
	}
	a.mu.Lock()
	draining := a.state.setPools(pools)
	if len(draining) > 0 {
		a.publishAllLocked()
	}
	a.mu.Unlock()
	for _, p := range draining {
		a.Log.Info("A pod CIDR is no longer in its pool (removed from it, or the pool is being deleted): nothing new comes from it, and it is released once its last pod is gone", "node", a.node, "cidr", p)
	}
}

func (a *agent) waitTables(ctx context.Context) error {
	for {
		txn := a.DB.ReadTxn()
		ok1, w1 := a.CiliumNodes.Initialized(txn)
		ok2, w2 := a.Pools.Initialized(txn)
		if ok1 && ok2 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w1:
		case <-w2:
		}
	}
}

// syncOnce writes the demand and releases what is not needed. Every write
// is conditional on the CiliumNode's version: the allocator writes the
// same object. It returns how long to wait before a demand it held back
// (requestEvery) is due.
func (a *agent) syncOnce(ctx context.Context, txn statedb.ReadTxn, cn *tables.CiliumNode, found bool) (time.Duration, error) {
	a.mu.Lock()
	demand := a.state.demand()
	waiting := a.state.waiting()
	a.mu.Unlock()

	if !found {
		return 0, a.createCiliumNode(ctx, txn, demand)
	}
	// The watch may not have brought back the agent's own last write yet:
	// the version it answered is the newer one, and writing on top of the
	// older one would only earn a conflict.
	cn = a.written.current(cn)

	if n, _, ok := a.Nodes.Get(txn, tables.NodeNameIndex.Query(a.node)); ok && n.UID != "" && cn.OwnerNodeUID != n.UID {
		// Created while its Node was away (deleted, or not registered
		// yet): it goes with the Node from now on.
		return 0, a.patchOwner(ctx, cn, n) // one write per version
	}

	if !sameDemand(cn.Requested, demand) {
		if wait := time.Until(a.lastRequest.Add(requestEvery)); wait > 0 && !waiting {
			return wait, nil
		}
		return 0, a.patchRequested(ctx, cn, demand) // one write per version: the release waits for the new row
	}

	return 0, a.releaseUnneeded(ctx, cn, demand)
}

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

// patchOwner makes the Node n the owner of the CiliumNode cn. A conflict
// is no error: the next version of the row brings us back.
func (a *agent) patchOwner(ctx context.Context, cn *tables.CiliumNode, n *tables.Node) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": cn.ResourceVersion,
		"ownerReferences": []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: a.node, UID: types.UID(n.UID)}},
	}})
	got, err := a.Herald.CiliumV2().CiliumNodes().Patch(ctx, a.node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: AgentFieldManager})
	if err != nil {
		if apierrors.IsConflict(err) {
			return nil
		}
		return fmt.Errorf("CiliumNode %s: owner: %w", a.node, err)
	}
	a.written.record(cn.ResourceVersion, got)
	a.Log.Info("The CiliumNode belongs to its Node again", "node", a.node, "nodeUID", n.UID)
	return nil
}

// patchRequested writes the demand as the CiliumNode's requested list.
func (a *agent) patchRequested(ctx context.Context, cn *tables.CiliumNode, demand []tables.PoolDemand) error {
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cn.ResourceVersion},
		"spec":     map[string]any{"ipam": map[string]any{"pools": map[string]any{"requested": requestedK8s(demand)}}},
	})
	got, err := a.Herald.CiliumV2().CiliumNodes().Patch(ctx, a.node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: AgentFieldManager})
	if err != nil {
		if apierrors.IsConflict(err) {
			return nil // the next version of the row brings us back
		}
		return fmt.Errorf("CiliumNode %s: requested: %w", a.node, err)
	}
	a.written.record(cn.ResourceVersion, got)
	a.lastRequest = time.Now()
	a.Log.Info("Requested pod addresses", "node", a.node, "requested", demand)
	return nil
}

// releaseUnneeded removes from the CiliumNode the CIDRs the demand no
// longer needs. If the write fails the state keeps them.
func (a *agent) releaseUnneeded(ctx context.Context, cn *tables.CiliumNode, demand []tables.PoolDemand) error {
	a.mu.Lock()
	release := a.state.releasable(demand, releaseSettle)
	a.mu.Unlock()
	if len(release) == 0 {
		return nil
	}
	keep := without(cn.Allocated, release)
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": cn.ResourceVersion},
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
	a.written.record(cn.ResourceVersion, got)
	a.Log.Info("Released pod CIDRs the node no longer needs", "node", a.node, "cidrs", release)
	return nil
}

// ownWrite is the CiliumNode as the agent's last write left it, and the
// version that write was made on.
type ownWrite struct {
	base   string
	result *tables.CiliumNode
}

// record remembers a write made on version base.
func (w *ownWrite) record(base string, result *v2.CiliumNode) {
	w.base, w.result = base, tables.CiliumNodeFromK8s(result)
}

// current is the newer of the row and the agent's own last write: the
// write's result while the row is still the version it was made on.
// Nothing but the agent's write can lie between the two: the write was
// conditional on that version.
func (w *ownWrite) current(row *tables.CiliumNode) *tables.CiliumNode {
	if w.result != nil && row.ResourceVersion == w.base {
		return w.result
	}
	return row
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
