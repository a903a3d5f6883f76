package cidrallocator

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/heraldlb/herald/tables"
)

// usableLimit caps address counts: no node asks for more.
const usableLimit = 1 << 40

// Result is what changed in one Evaluate.
type Result struct {
	Decisions        []*tables.PodCIDRDecision
	DeletedDecisions []string // nodes
	PoolStatuses     []*tables.PodIPPoolStatus
	DeletedPools     []string
	// NextCheck, if set, is when Evaluate must run again although nothing
	// changed (an orphan CiliumNode's grace period ends).
	NextCheck time.Time
}

// Empty reports whether nothing changed.
func (r Result) Empty() bool {
	return len(r.Decisions)+len(r.DeletedDecisions)+len(r.PoolStatuses)+len(r.DeletedPools) == 0
}

// Evaluate decides every node and pool touched since the last call. Nodes
// go in name order, so that when a pool runs short the outcome does not
// depend on the order changes arrived in.
func (e *Engine) Evaluate(now time.Time) Result {
	var res Result
	e.updateQuarantine(now, &res)
	names := make([]string, 0, len(e.dirtyNodes))
	for name := range e.dirtyNodes {
		names = append(names, name)
	}
	clear(e.dirtyNodes)
	sort.Strings(names)
	for _, name := range names {
		if n := e.nodes[name]; n != nil {
			e.evaluateNode(n, now, &res)
		}
	}
	for _, n := range e.nodes {
		if n.row != nil && n.decision != nil && !n.decision.Delete && !n.nodeGoneSince.IsZero() {
			at := n.nodeGoneSince.Add(orphanGrace)
			if at.After(now) && (res.NextCheck.IsZero() || at.Before(res.NextCheck)) {
				res.NextCheck = at
			}
		}
	}

	pools := make([]string, 0, len(e.dirtyPools))
	for name := range e.dirtyPools {
		pools = append(pools, name)
	}
	clear(e.dirtyPools)
	sort.Strings(pools)
	for _, name := range pools {
		p := e.pools[name]
		if p == nil {
			continue
		}
		st := e.poolStatus(p)
		if p.status == nil || !p.status.SameStatus(st) {
			p.status = st
			res.PoolStatuses = append(res.PoolStatuses, st)
		}
	}
	res.DeletedPools, e.deleted = e.deleted, nil
	return res
}

func (e *Engine) evaluateNode(n *nodeState, now time.Time, res *Result) {
	if n.row == nil {
		if n.decision != nil {
			res.DeletedDecisions = append(res.DeletedDecisions, n.name)
		}
		e.forgetShort(n.name)
		delete(e.nodes, n.name)
		return
	}
	d := &tables.PodCIDRDecision{Node: n.name, UID: n.row.UID}
	switch {
	case e.k8sNodes[n.name]:
		n.nodeGoneSince = time.Time{}
	case n.nodeGoneSince.IsZero():
		// The grace runs from when this term first saw the CiliumNode
		// without its Node: the Node's deletion, or the CiliumNode's
		// creation before its Node registered.
		n.nodeGoneSince = now
	}
	if !n.nodeGoneSince.IsZero() && !now.Before(n.nodeGoneSince.Add(orphanGrace)) {
		// Its Node is gone: the CiliumNode goes, and with it what it held.
		d.Delete = true
		e.emit(n, d, res)
		return
	}
	// Which pools leave the node short is decided afresh from what it asks
	// now, in every family: a family that is met, or a pool it no longer
	// asks of, no longer counts it.
	e.forgetShort(n.name)
	var errs []string
	for _, dem := range n.row.Requested {
		errs = append(errs, e.fill(n, dem)...)
	}
	errs = append(errs, e.claimedTwice(n)...)
	errs = append(errs, e.unknownPools(n)...)
	errs = append(errs, n.row.AllocatedErrors...)
	d.Error = strings.Join(errs, "; ")
	for _, h := range n.pending {
		d.Add = addTo(d.Add, h.pool, h.prefix)
	}
	e.emit(n, d, res)
}

func (e *Engine) emit(n *nodeState, d *tables.PodCIDRDecision, res *Result) {
	if n.decision != nil && n.decision.SameDecision(d) {
		return
	}
	n.decision = d
	res.Decisions = append(res.Decisions, d)
}

func addTo(add []tables.PoolCIDRs, pool string, p netip.Prefix) []tables.PoolCIDRs {
	for i := range add {
		if add[i].Pool == pool {
			add[i].CIDRs = append(add[i].CIDRs, p)
			return add
		}
	}
	return append(add, tables.PoolCIDRs{Pool: pool, CIDRs: []netip.Prefix{p}})
}

// claimedTwice reports CIDRs the node shares with another node: a loud
// error on both, never fixed silently (their pods may have the same
// addresses; only an operator can tell which node must let go).
func (e *Engine) claimedTwice(n *nodeState) []string {
	var errs []string
	for _, h := range n.current {
		for _, o := range e.held.overlapping(h.prefix) {
			if o.node != n.name {
				errs = append(errs, fmt.Sprintf("CIDR %s is also allocated to node %s (pool %q): remove it from one of the two CiliumNodes", h.prefix, o.node, o.pool))
			}
		}
	}
	return errs
}

// unknownPools reports CIDRs held under a pool that does not exist.
func (e *Engine) unknownPools(n *nodeState) []string {
	var names []string
	for _, h := range n.current {
		if e.pools[h.pool] == nil && !slices.Contains(names, h.pool) {
			names = append(names, h.pool)
		}
	}
	var errs []string
	for _, name := range names {
		errs = append(errs, fmt.Sprintf("holds CIDRs of pool %q, which does not exist", name))
	}
	return errs
}

// poolStatus computes a pool's status from the nodes' holdings.
func (e *Engine) poolStatus(p *poolState) *tables.PodIPPoolStatus {
	st := &tables.PodIPPoolStatus{Name: p.row.Name, UID: p.row.UID, Conflict: p.conflict, InvalidSpec: strings.Join(p.row.SpecErrors, "; ")}
	type famCount struct {
		cidrs, addrs int64
		nodes        map[string]bool
	}
	counts := map[tables.Family]*famCount{tables.IPv4: {nodes: map[string]bool{}}, tables.IPv6: {nodes: map[string]bool{}}}
	var removed, twice, holders []string
	for _, name := range sortedNodeNames(e.nodes) {
		n := e.nodes[name]
		holds := false
		for _, h := range n.current {
			if h.pool != p.row.Name {
				continue
			}
			f := tables.FamilyOf(h.prefix.Addr())
			counts[f].cidrs++
			counts[f].nodes[n.name] = true
			if !holds {
				holds = true
				holders = append(holders, n.name)
			}
			if !inPool(p.row.Family(f), h.prefix) {
				removed = append(removed, fmt.Sprintf("%s (node %s)", h.prefix, n.name))
			}
			for _, o := range e.held.overlapping(h.prefix) {
				if o.node != n.name && o.node > n.name {
					twice = append(twice, fmt.Sprintf("%s (nodes %s and %s)", h.prefix, n.name, o.node))
				}
			}
		}
		if n.row != nil {
			for _, u := range n.row.Usage {
				if u.Pool == p.row.Name {
					counts[tables.IPv4].addrs += int64(u.IPv4)
					counts[tables.IPv6].addrs += int64(u.IPv6)
				}
			}
		}
	}
	for _, f := range []tables.Family{tables.IPv4, tables.IPv6} {
		fam, c := p.row.Family(f), counts[f]
		if fam == nil && c.cidrs == 0 {
			continue
		}
		total := new(big.Int)
		if fam != nil {
			for _, parent := range fam.CIDRs {
				n, _ := new(big.Int).SetString(tables.PrefixCount(parent, fam.MaskSize), 10)
				total.Add(total, n)
			}
		}
		fs := &tables.PodPoolFamilyStatus{CIDRsAllocated: int32(c.cidrs), CIDRsTotal: total.String(), AddressesInUse: c.addrs, Nodes: int32(len(c.nodes))}
		if f == tables.IPv4 {
			st.IPv4 = fs
		} else {
			st.IPv6 = fs
		}
	}
	if len(removed) > 0 {
		st.RemovedInUse = "CIDRs removed from the pool drain (their nodes keep them for the pods in them, hand out nothing more from them and release each once its last pod is gone; no one else gets them meanwhile): " + strings.Join(removed, ", ")
	}
	if len(twice) > 0 {
		st.ClaimedTwice = "CIDRs allocated to two nodes: " + strings.Join(twice, ", ")
	}
	if len(p.exhausted) > 0 {
		var ms []string
		for _, name := range sortedKeys(p.exhausted) {
			ms = append(ms, p.exhausted[name])
		}
		st.Exhausted = "no free CIDR left for: " + strings.Join(ms, "; ")
	}
	st.InUse = len(holders) > 0
	if p.row.Deleting && st.InUse {
		st.Terminating = "waiting for nodes to release their CIDRs: " + strings.Join(holders, ", ")
	}
	return st
}

// forgetShort drops the node from every pool's exhausted list; a pool whose
// list changes has its status evaluated again.
func (e *Engine) forgetShort(node string) {
	for name, p := range e.pools {
		if _, ok := p.exhausted[node]; ok {
			delete(p.exhausted, node)
			e.dirtyPools[name] = struct{}{}
		}
	}
}

func inPool(fam *tables.PodPoolFamily, c netip.Prefix) bool {
	if fam == nil {
		return false
	}
	for _, parent := range fam.CIDRs {
		if parent.Bits() <= c.Bits() && parent.Contains(c.Addr()) {
			return true
		}
	}
	return false
}

func sortedNodeNames(m map[string]*nodeState) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// updateQuarantine stamps the CIDRs freed by deleted CiliumNodes, lets go
// of those whose time is up (nodes that wait for room look again), and
// asks to be called again when the next one is.
func (e *Engine) updateQuarantine(now time.Time, res *Result) {
	for _, p := range e.freed {
		e.quarantine[p] = now.Add(quarantineFor)
	}
	e.freed = nil
	for p, until := range e.quarantine {
		if now.Before(until) {
			if res.NextCheck.IsZero() || until.Before(res.NextCheck) {
				res.NextCheck = until
			}
			continue
		}
		delete(e.quarantine, p)
		for name, n := range e.nodes {
			if n.decision != nil && n.decision.Error != "" {
				e.dirtyNodes[name] = struct{}{}
			}
		}
	}
}
