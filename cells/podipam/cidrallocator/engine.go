package cidrallocator

import (
	"net/netip"
	"slices"
	"time"

	"github.com/heraldlb/herald/cells/internal/poolorder"
	"github.com/heraldlb/herald/tables"
)

// quarantineFor is how long the CIDRs of a deleted CiliumNode stay out of
// reach of other nodes: longer than Kubernetes takes to delete the pods of
// a deleted Node (the pod garbage collector waits 40 s) and the kubelet to
// stop them.
const quarantineFor = 2 * time.Minute

// orphanGrace is how long a CiliumNode may stay without its Node before it
// is deleted, counted from when the Node went (or, for a CiliumNode created
// before its Node registered, from its creation): long enough for a Node
// re-registered under the same name, or one that is still registering.
const orphanGrace = time.Minute

// Engine is the pod CIDR allocator's decision logic: pools, CiliumNodes and
// Nodes go in; the CIDRs to add to each CiliumNode and each pool's status
// come out. No I/O; the allocator job owns the only instance, one per term.
//
// Invariants:
//   - a CIDR is added to a node only if no node holds any part of it, in
//     any pool (heldIndex): never one address range on two nodes;
//   - what a CiliumNode lists stays the node's until the node removes it or
//     the CiliumNode is deleted: no pool edit takes a CIDR away;
//   - a CIDR the allocator decided to add is held from that moment, before
//     the CiliumNode shows it.
type Engine struct {
	pools     map[string]*poolState
	poolOrder []*poolState // oldest first, then by name
	nodes     map[string]*nodeState
	k8sNodes  map[string]bool
	held      *heldIndex

	dirtyNodes map[string]struct{}
	dirtyPools map[string]struct{}
	deleted    []string // pools whose status rows go

	// quarantine are the CIDRs of deleted CiliumNodes, with when another
	// node may get them: a CiliumNode can go while its pods still run (its
	// Node deleted: they go some time later), and their addresses must
	// not appear on another node meanwhile. freed are those deleted since
	// the last Evaluate, which stamps them.
	quarantine map[netip.Prefix]time.Time
	freed      []netip.Prefix

	// lbPools are the CiliumLoadBalancerIPPools (lbpools.go).
	lbPools map[string]lbPool
}

type poolState struct {
	row      *tables.PodIPPool
	conflict string                  // overlap with an older pool; no new CIDRs
	status   *tables.PodIPPoolStatus // last emitted
	// exhausted names nodes whose demand the pool could not meet, by node.
	exhausted map[string]string
}

type nodeState struct {
	name string
	row  *tables.CiliumNode // nil once deleted
	// pending are CIDRs decided for the node that its CiliumNode does not
	// list yet.
	pending  []holding
	current  []holding // held: what the row lists, plus pending
	decision *tables.PodCIDRDecision
	// nodeGoneSince is when this term first saw the CiliumNode without its
	// Node (zero while the Node exists).
	nodeGoneSince time.Time
}

// NewEngine returns an empty engine.
func NewEngine() *Engine {
	return &Engine{
		pools: map[string]*poolState{}, nodes: map[string]*nodeState{}, k8sNodes: map[string]bool{},
		held: newHeldIndex(), dirtyNodes: map[string]struct{}{}, dirtyPools: map[string]struct{}{},
		quarantine: map[netip.Prefix]time.Time{}, lbPools: map[string]lbPool{},
	}
}

// UpsertPool adds or replaces a pool. Every node and pool is evaluated
// again (room may have appeared, conflicts may have changed).
func (e *Engine) UpsertPool(row *tables.PodIPPool) {
	p := e.pools[row.Name]
	if p == nil {
		p = &poolState{exhausted: map[string]string{}}
		e.pools[row.Name] = p
	}
	p.row = row
	e.reorder()
	e.everythingDirty()
}

// DeletePool forgets a pool. What nodes hold of it stays theirs.
func (e *Engine) DeletePool(name string) {
	if _, ok := e.pools[name]; !ok {
		return
	}
	delete(e.pools, name)
	e.deleted = append(e.deleted, name)
	e.reorder()
	e.everythingDirty()
}

func (e *Engine) reorder() {
	e.poolOrder = poolorder.Sorted(e.poolOrder, e.pools, func(p *poolState) (time.Time, string) {
		return p.row.CreationTimestamp, p.row.Name
	})
	e.detectConflicts()
}

func (e *Engine) everythingDirty() {
	for name := range e.nodes {
		e.dirtyNodes[name] = struct{}{}
	}
	for name := range e.pools {
		e.dirtyPools[name] = struct{}{}
	}
}

// UpsertNode adds or updates a CiliumNode. CIDRs it lists are held from now
// on; CIDRs it no longer lists (released by its agent) are free again,
// unless the allocator just decided to add them.
func (e *Engine) UpsertNode(row *tables.CiliumNode) {
	n := e.nodes[row.Name]
	if n == nil || (n.row != nil && n.row.UID != row.UID) {
		if n != nil {
			e.DeleteNode(row.Name)
		}
		n = &nodeState{name: row.Name}
		e.nodes[row.Name] = n
	}
	old, oldRow := n.current, n.row
	n.row = row
	// Pending CIDRs the node now lists are no longer pending.
	n.pending = slices.DeleteFunc(n.pending, func(h holding) bool { return row.Holds(h.pool, h.prefix) })
	var hs []holding
	for _, a := range row.Allocated {
		for _, c := range a.CIDRs {
			hs = append(hs, holding{prefix: c, node: row.Name, pool: a.Pool})
		}
	}
	e.setHoldings(n, append(hs, n.pending...))
	e.nodeChanged(n, old, oldRow)
}

// DeleteNode forgets a CiliumNode and frees everything it held.
func (e *Engine) DeleteNode(name string) {
	n := e.nodes[name]
	if n == nil {
		return
	}
	old, oldRow := n.current, n.row
	for _, h := range old {
		e.freed = append(e.freed, h.prefix)
	}
	e.setHoldings(n, nil)
	n.row = nil
	n.pending = nil
	e.nodeChanged(n, old, oldRow)
}

// SetK8sNode records whether the Node of that name exists.
func (e *Engine) SetK8sNode(name string, exists bool) {
	if exists {
		e.k8sNodes[name] = true
	} else {
		delete(e.k8sNodes, name)
	}
	if _, ok := e.nodes[name]; ok {
		e.dirtyNodes[name] = struct{}{}
	}
}

func (e *Engine) setHoldings(n *nodeState, hs []holding) {
	for _, h := range n.current {
		e.held.remove(h)
	}
	n.current = hs
	for _, h := range hs {
		e.held.add(h)
	}
}

// nodeChanged marks for evaluation what a change of node n can affect: n,
// the pools it asks of or holds from (before and after), the nodes whose
// CIDRs overlap its own (claimed twice), and, when it freed a CIDR, every
// node still waiting for room.
func (e *Engine) nodeChanged(n *nodeState, old []holding, oldRow *tables.CiliumNode) {
	e.dirtyNodes[n.name] = struct{}{}
	for _, row := range []*tables.CiliumNode{oldRow, n.row} {
		if row == nil {
			continue
		}
		for _, d := range row.Requested {
			e.dirtyPools[d.Pool] = struct{}{}
		}
	}
	freed := false
	for _, hs := range [][]holding{old, n.current} {
		for _, h := range hs {
			e.dirtyPools[h.pool] = struct{}{}
			for _, o := range e.held.overlapping(h.prefix) {
				e.dirtyNodes[o.node] = struct{}{}
			}
		}
	}
	for _, h := range old {
		if !slices.Contains(n.current, h) {
			freed = true
		}
	}
	if freed {
		for name, other := range e.nodes {
			if other.decision != nil && other.decision.Error != "" {
				e.dirtyNodes[name] = struct{}{}
			}
		}
	}
}

// detectConflicts marks every pool that overlaps an older one, or an older
// CiliumLoadBalancerIPPool (lbpools.go); an IPv4 and an IPv6 CIDR never
// overlap.
func (e *Engine) detectConflicts() {
	for i, p := range e.poolOrder {
		old := p.conflict
		p.conflict = ""
		for _, older := range e.poolOrder[:i] {
			if msg := overlapMessage(p.row, older.row); msg != "" {
				p.conflict = msg
				break
			}
		}
		if p.conflict == "" {
			p.conflict = e.lbPoolConflict(p.row)
		}
		if old != p.conflict {
			e.dirtyPools[p.row.Name] = struct{}{}
		}
	}
}

func overlapMessage(p, older *tables.PodIPPool) string {
	for _, f := range []tables.Family{tables.IPv4, tables.IPv6} {
		a, b := p.Family(f), older.Family(f)
		if a == nil || b == nil {
			continue
		}
		for _, x := range a.CIDRs {
			for _, y := range b.CIDRs {
				if tables.PrefixesOverlap(x, y) {
					return "Pool conflicts since CIDR '" + x.String() + "' overlaps CIDR '" + y.String() + "' from CiliumPodIPPool '" + older.Name + "'"
				}
			}
		}
	}
	return ""
}

// holdingsOf returns what the node holds from a pool in one family.
func (n *nodeState) holdingsOf(pool string, f tables.Family) []netip.Prefix {
	var out []netip.Prefix
	for _, h := range n.current {
		if h.pool == pool && tables.FamilyOf(h.prefix.Addr()) == f {
			out = append(out, h.prefix)
		}
	}
	return out
}

// Recheck marks every node for evaluation (a grace period may have ended).
func (e *Engine) Recheck() {
	for name := range e.nodes {
		e.dirtyNodes[name] = struct{}{}
	}
}
