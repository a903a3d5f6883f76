package cidrallocator

import (
	"slices"

	"github.com/heraldlb/herald/cells/internal/poolorder"
	"github.com/heraldlb/herald/tables"
)

// lbPool is what the pod CIDR allocator knows of a
// CiliumLoadBalancerIPPool: its age and its blocks. A pod pool that
// overlaps an older one would give a pod an address a Service may hold, so
// it is conflicting; LB IPAM marks the LB pool instead when the pod pool is
// the older (poolorder.Older).
type lbPool struct {
	ref    poolorder.Ref
	blocks []tables.LBPoolBlock
}

// UpsertLBPool adds or replaces a CiliumLoadBalancerIPPool. Only its blocks
// and its age matter here.
func (e *Engine) UpsertLBPool(row *tables.LBPool) {
	lp := lbPool{ref: poolorder.Ref{Kind: poolorder.LBPool, Name: row.Name, Created: row.CreationTimestamp}, blocks: row.Blocks}
	if old, ok := e.lbPools[row.Name]; ok && old.ref.Same(lp.ref) && slices.Equal(old.blocks, lp.blocks) {
		return
	}
	e.lbPools[row.Name] = lp
	e.detectConflicts()
	e.everythingDirty()
}

// DeleteLBPool forgets a CiliumLoadBalancerIPPool.
func (e *Engine) DeleteLBPool(name string) {
	if _, ok := e.lbPools[name]; !ok {
		return
	}
	delete(e.lbPools, name)
	e.detectConflicts()
	e.everythingDirty()
}

// lbPoolConflict returns the PoolConflict message of a pod pool that
// overlaps an older LB pool (the oldest such one), or "".
func (e *Engine) lbPoolConflict(p *tables.PodIPPool) string {
	me := poolorder.Ref{Kind: poolorder.PodPool, Name: p.Name, Created: p.CreationTimestamp}
	var msg string
	var by *poolorder.Ref
	for _, lp := range e.lbPools {
		if !poolorder.Older(lp.ref, me) || (by != nil && !poolorder.Older(lp.ref, *by)) {
			continue
		}
		if m := lbOverlapMessage(p, lp); m != "" {
			msg, by = m, &lp.ref
		}
	}
	return msg
}

func lbOverlapMessage(p *tables.PodIPPool, lp lbPool) string {
	for _, f := range []*tables.PodPoolFamily{p.IPv4, p.IPv6} {
		if f == nil {
			continue
		}
		for _, c := range f.CIDRs {
			for _, b := range lp.blocks {
				if b.OverlapsPrefix(c) {
					return "Pool conflicts since CIDR '" + c.String() + "' overlaps " + b.Describe() + " from CiliumLoadBalancerIPPool '" + lp.ref.Name + "'"
				}
			}
		}
	}
	return ""
}
