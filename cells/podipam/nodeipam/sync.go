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
// listed in its status. It decides those writes (the table
// ciliumnode-writes); the reconciler of that table makes them.
func (a *agent) syncLoop(ctx context.Context, health cell.Health) error {
	if err := a.waitTables(ctx); err != nil {
		return nil
	}
	s := &syncer{poolsRevision: ^statedb.Revision(0)} // no pools seen yet
	// settle is set to when the next empty CIDR has settled.
	settle := time.NewTimer(releaseSettle)
	settle.Stop()
	defer settle.Stop()
	health.OK("waiting for the CiliumNode")
	for {
		txn := a.DB.ReadTxn()
		cn, _, cnWatch, found := a.CiliumNodes.GetWatch(txn, tables.CiliumNodeNameIndex.Query(a.node))
		_, poolsWatch := a.Pools.AllWatch(txn)
		a.observe(s, txn, cn, found)
		later, settleIn := a.decideSpec(txn, cn, found)
		switch err := a.written.lastErr(); {
		case err != nil:
			health.Degraded("cannot update the CiliumNode", err)
		case found:
			health.OK(fmt.Sprintf("%d CIDRs", countCIDRs(cn.Allocated)))
		}
		if later > 0 && s.requestTimer == nil {
			s.requestTimer = time.After(later)
		}
		if settleIn > 0 {
			settle.Reset(settleIn)
		}
		a.decideUsed(s, cn, found)

		select {
		case <-ctx.Done():
			return nil
		case <-cnWatch:
		case <-poolsWatch:
		case <-a.kick:
		case <-settle.C:
		case <-s.usedTimer:
			s.usedTimer = nil
		case <-s.requestTimer:
			s.requestTimer = nil
		}
	}
}

// syncer is the sync job's own state from one look to the next.
type syncer struct {
	lastAllocated []tables.PoolCIDRs
	seen          bool
	poolsRevision statedb.Revision
	operatorError string
	// lastUsed is when status.ipam.used was last found to differ (and a
	// write decided): usedEvery paces the next look.
	lastUsed     time.Time
	usedTimer    <-chan time.Time
	requestTimer <-chan time.Time
}

// observe takes into the state what changed in the pools and in the
// CiliumNode (its CIDRs, the allocator's shortfalls).
func (a *agent) observe(s *syncer, txn statedb.ReadTxn, cn *tables.CiliumNode, found bool) {
	if rev := a.Pools.Revision(txn); rev != s.poolsRevision {
		a.syncPools(txn)
		s.poolsRevision = rev
	}
	if found && (!s.seen || !sameAllocated(cn.Allocated, s.lastAllocated)) {
		a.takeAllocated(cn.Allocated)
		s.lastAllocated, s.seen = cn.Allocated, true
	}
	if found && cn.OperatorError != s.operatorError {
		a.mu.Lock()
		a.state.setShortfalls(tables.ParsePodCIDRShortfalls(cn.OperatorError))
		a.mu.Unlock()
		s.operatorError = cn.OperatorError
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

// decideUsed decides to write status.ipam.used when it differs from the
// addresses in use, at most once per usedEvery: a look that comes too
// soon is left to the timer (started if not running).
//
// status.ipam.used is compared with what the CiliumNode lists, not with
// what was last written: after a restart, or a write of someone else, it
// still ends up exact (down to empty).
//
// Within usedEvery of the last decided write nothing is compared: the map
// and its digest cost time in the number of addresses in use, under the
// lock every ADD takes, and the loop runs after every ADD. The timer
// compares then.
func (a *agent) decideUsed(s *syncer, cn *tables.CiliumNode, found bool) {
	if !found {
		return
	}
	if wait := time.Until(s.lastUsed.Add(usedEvery)); wait > 0 {
		if s.usedTimer == nil {
			s.usedTimer = time.After(wait)
		}
		return
	}
	a.mu.Lock()
	used := a.usedMap()
	a.mu.Unlock()
	if d := tables.UsedDigest(used); d != cn.UsedDigest {
		a.decide(&nodeWrite{Part: partUsed, Base: cn.ResourceVersion, Used: used, Digest: d})
		s.lastUsed, s.usedTimer = time.Now(), nil
	}
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

// decideSpec decides the next write of the CiliumNode's spec: its
// creation, its owner, the demand, or releasing what is not needed. Every
// write is conditional on the CiliumNode's version: the allocator writes
// the same object. It returns how long to wait before a demand it held
// back (requestEvery) is due, and before the next empty CIDR has settled
// (releaseSettle).
func (a *agent) decideSpec(txn statedb.ReadTxn, cn *tables.CiliumNode, found bool) (later, settleIn time.Duration) {
	a.mu.Lock()
	demand := a.state.demand()
	waiting := a.state.waiting()
	a.mu.Unlock()

	if !found {
		a.decide(&nodeWrite{Part: partSpec, Op: opCreate, Demand: demand})
		return 0, 0
	}
	// The watch may not have brought back the agent's own last write yet:
	// the version it answered is the newer one, and writing on top of the
	// older one would only earn a conflict.
	cn = a.written.current(cn)
	row := &nodeWrite{Part: partSpec, Base: cn.ResourceVersion}

	if n, _, ok := a.Nodes.Get(txn, tables.NodeNameIndex.Query(a.node)); ok && n.UID != "" && cn.OwnerNodeUID != n.UID {
		// Created while its Node was away (deleted, or not registered
		// yet): it goes with the Node from now on.
		row.Op, row.Owner = opOwner, n.UID
		a.decide(row) // one write per version
		return 0, 0
	}

	if !sameDemand(cn.Requested, demand) {
		if wait := time.Until(a.written.sinceRequest().Add(requestEvery)); wait > 0 && !waiting {
			return wait, 0
		}
		row.Op, row.Demand = opRequested, demand
		a.decide(row) // one write per version: the release waits for the new row
		return 0, 0
	}

	// Only a look at what is releasable: the write asks again, and marks
	// them releasing, as it goes out.
	a.mu.Lock()
	release := a.state.releasable(demand, releaseSettle)
	a.state.keep(release)
	settleIn = a.state.nextSettle(releaseSettle)
	a.mu.Unlock()
	if len(release) == 0 {
		// Nothing to release: no row, rather than one empty decision per
		// version of the CiliumNode for the reconciler to pass over.
		return 0, settleIn
	}
	row.Op, row.Demand, row.Allocated, row.Release = opRelease, demand, cn.Allocated, release
	a.decide(row)
	return 0, settleIn
}
