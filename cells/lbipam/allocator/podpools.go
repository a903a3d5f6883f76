package allocator

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/heraldlb/herald/cells/internal/poolorder"
	"github.com/heraldlb/herald/tables"
)

// podPool is what LB IPAM knows of a CiliumPodIPPool while multi-pool IPAM
// hands its addresses to pods: its age and its CIDRs. An LB pool that
// overlaps an older one would give a Service an address a pod may hold, so
// it is conflicting; the pod CIDR allocator marks the pod pool instead when
// the LB pool is the older (poolorder.Older).
type podPool struct {
	ref   poolorder.Ref
	cidrs []netip.Prefix
}

func podPoolFrom(row *tables.PodIPPool) podPool {
	pp := podPool{ref: poolorder.Ref{Kind: poolorder.PodPool, Name: row.Name, Created: row.CreationTimestamp}}
	for _, f := range []*tables.PodPoolFamily{row.IPv4, row.IPv6} {
		if f != nil {
			pp.cidrs = append(pp.cidrs, f.CIDRs...)
		}
	}
	return pp
}

// UpsertPodPool adds or replaces a CiliumPodIPPool. Only its CIDRs and its
// age matter here: the status updates the pod CIDR allocator writes change
// nothing.
func (e *Engine) UpsertPodPool(row *tables.PodIPPool) {
	pp := podPoolFrom(row)
	if old, ok := e.podPools[row.Name]; ok && old.ref.Same(pp.ref) && slices.Equal(old.cidrs, pp.cidrs) {
		return
	}
	e.podPools[row.Name] = pp
	e.poolsChanged()
}

// DeletePodPool forgets a CiliumPodIPPool.
func (e *Engine) DeletePodPool(name string) {
	if _, ok := e.podPools[name]; !ok {
		return
	}
	delete(e.podPools, name)
	e.poolsChanged()
}

// podPoolConflict returns the PoolConflict message of an LB pool that
// overlaps an older pod pool (the oldest such one), or "".
func (e *Engine) podPoolConflict(p *poolState) string {
	me := poolorder.Ref{Kind: poolorder.LBPool, Name: p.row.Name, Created: p.row.CreationTimestamp}
	var msg string
	var by *poolorder.Ref
	for _, pp := range e.podPools {
		if !poolorder.Older(pp.ref, me) || (by != nil && !poolorder.Older(pp.ref, *by)) {
			continue
		}
		for _, b := range p.row.Blocks {
			if i := slices.IndexFunc(pp.cidrs, b.OverlapsPrefix); i >= 0 {
				msg = fmt.Sprintf("Pool conflicts since %s overlaps CIDR '%s' from CiliumPodIPPool '%s'", b.Describe(), pp.cidrs[i], pp.ref.Name)
				by = &pp.ref
				break
			}
		}
	}
	return msg
}
