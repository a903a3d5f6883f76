package nodeipam

import (
	"context"
	"fmt"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

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
