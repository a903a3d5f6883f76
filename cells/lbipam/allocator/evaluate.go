package allocator

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/heraldlb/herald/tables"
)

// Result is what changed in one Evaluate: rows to write and rows to delete.
type Result struct {
	Allocations        []*tables.LBAllocation
	DeletedAllocations []string // Service keys
	PoolStatuses       []*tables.LBPoolStatus
	DeletedPools       []string
}

// Empty reports whether nothing changed.
func (r Result) Empty() bool {
	return len(r.Allocations)+len(r.DeletedAllocations)+len(r.PoolStatuses)+len(r.DeletedPools) == 0
}

// Evaluate decides every Service and pool touched since the last call,
// oldest Service first.
func (e *Engine) Evaluate() Result {
	var res Result
	for {
		if e.freed {
			// Room was made: Services still waiting get another chance.
			e.freed = false
			for key, s := range e.svcs {
				if s.decision != nil && s.decision.Managed && !s.decision.Satisfied {
					e.dirtySvcs[key] = struct{}{}
				}
			}
		}
		if len(e.dirtySvcs) == 0 {
			break
		}
		dirty := make([]*svcState, 0, len(e.dirtySvcs))
		for key := range e.dirtySvcs {
			dirty = append(dirty, e.svcs[key])
		}
		clear(e.dirtySvcs)
		slices.SortFunc(dirty, func(a, b *svcState) int { return olderFirst(a, b) })
		for _, s := range dirty {
			e.evaluate(s, &res)
		}
	}
	// Allocations may have been emitted twice in one call; keep the last.
	res.Allocations = lastPerKey(res.Allocations)

	names := make([]string, 0, len(e.dirtyPools))
	for name := range e.dirtyPools {
		names = append(names, name)
	}
	clear(e.dirtyPools)
	slices.Sort(names)
	for _, name := range names {
		p := e.pools[name]
		if p == nil {
			continue
		}
		st := p.computeStatus()
		if p.status == nil || !p.status.SameStatus(st) {
			p.status = st
			res.PoolStatuses = append(res.PoolStatuses, st)
		}
	}
	res.DeletedPools, e.deletedPools = e.deletedPools, nil
	return res
}

func olderFirst(a, b *svcState) int {
	if a.row == nil || b.row == nil {
		// Deleted Services first: they free addresses for the others.
		if c := cmp.Compare(boolInt(a.row != nil), boolInt(b.row != nil)); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	}
	if c := a.row.CreationTimestamp.Compare(b.row.CreationTimestamp); c != 0 {
		return c
	}
	return cmp.Compare(a.row.Key(), b.row.Key())
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func lastPerKey(allocs []*tables.LBAllocation) []*tables.LBAllocation {
	seen := map[string]int{}
	var out []*tables.LBAllocation
	for _, a := range allocs {
		if i, ok := seen[a.Key()]; ok {
			out[i] = a
			continue
		}
		seen[a.Key()] = len(out)
		out = append(out, a)
	}
	return out
}

// evaluate decides one Service.
func (e *Engine) evaluate(s *svcState, res *Result) {
	if s.row == nil {
		e.forget(s, res)
		return
	}
	row := s.row
	if !e.resp.Handles(row) {
		e.dropAll(s, "the service is no longer handled by LB IPAM (type or loadBalancerClass)")
		if (s.decision != nil && s.decision.Managed) || (s.decision == nil && row.ManagedByHerald) {
			e.emit(s, &tables.LBAllocation{Managed: false}, res)
		}
		return
	}
	if len(e.pools) == 0 && len(s.held) == 0 && s.decision == nil {
		return // dormant until the first pool exists
	}
	d := &tables.LBAllocation{Managed: true, Disagreement: row.Annotations.Disagreement}
	if row.Annotations.Error != "" {
		// Keep what the Service has: a typo must not take its IP away.
		d.Reason = tables.ReasonInvalidRequest
		d.Message = "Invalid LB IPAM request: " + row.Annotations.Error
		e.emit(s, d, res)
		return
	}
	want, reason, message := e.families.wantedFamilies(row)
	requested := row.Annotations.RequestedIPs
	poolReason, poolMessage := e.namedPoolProblem(row)

	e.validateHeld(s, want, reason != "")
	switch {
	case poolReason != "":
		d.Reason, d.Message = poolReason, poolMessage
	case reason != "" && len(requested) == 0:
		d.Reason, d.Message = reason, message
	case len(requested) > 0:
		d.Reason, d.Message = e.fillRequested(s, requested)
	default:
		d.Reason, d.Message = e.fillFamilies(s, want)
	}
	d.Satisfied = d.Reason == ""
	if d.Satisfied {
		d.Reason = tables.ReasonSatisfied
	}
	e.sortHeld(s, want, requested)
	e.emit(s, d, res)
}

// emit completes a decision and records it when it differs from the last.
func (e *Engine) emit(s *svcState, d *tables.LBAllocation, res *Result) {
	d.Namespace, d.Name, d.Generation = s.row.Namespace, s.row.Name, s.row.Generation
	d.IPs = slices.Clone(s.held)
	d.Released = s.released
	if s.decision != nil && len(d.Released) == 0 {
		// Nothing new was released: keep the notes of the last decision so
		// a re-evaluation in the same round does not drop them.
		d.Released = s.decision.Released
	}
	if s.decision != nil && s.decision.SameDecision(d) {
		return
	}
	s.released = nil
	s.decision = d
	res.Allocations = append(res.Allocations, d)
}

// forget handles a deleted Service.
func (e *Engine) forget(s *svcState, res *Result) {
	for _, h := range slices.Clone(s.held) {
		e.drop(s, h.Addr)
	}
	delete(e.svcs, s.key)
	if s.decision != nil {
		res.DeletedAllocations = append(res.DeletedAllocations, s.key)
	}
}

func (e *Engine) dropAll(s *svcState, why string) {
	for _, h := range slices.Clone(s.held) {
		e.release(s, h.Addr, why)
	}
}

// release drops an address from a Service and notes why for its Events.
func (e *Engine) release(s *svcState, a netip.Addr, why string) {
	e.drop(s, a)
	s.released = append(s.released, tables.ReleasedIP{Addr: a, Reason: why})
}

// validateHeld releases every held address that is no longer valid for the
// Service; everything else stays exactly where it is.
func (e *Engine) validateHeld(s *svcState, want []family, policyFailed bool) {
	row := s.row
	requested := row.Annotations.RequestedIPs
	seenFamily := map[family]bool{}
	for _, h := range slices.Clone(s.held) {
		a := h.Addr
		f := familyOf(a)
		var why string
		switch {
		case len(requested) > 0 && !slices.Contains(requested, a):
			why = "the IP is no longer among the requested IPs"
		case len(requested) == 0 && policyFailed:
			why = "the service's ipFamilyPolicy cannot be met"
		case len(requested) == 0 && !slices.Contains(want, f):
			why = fmt.Sprintf("the service no longer asks for an %s address", f)
		case len(requested) == 0 && seenFamily[f]:
			why = fmt.Sprintf("the service already holds another %s address", f)
		}
		if why == "" {
			if p := e.poolFor(a, row); p == nil {
				why = e.whyNoPool(a, row)
			} else {
				e.setPool(s, a, p.row.Name)
			}
		}
		if why == "" {
			for _, u := range e.ips[a].users {
				if u == s || u.row == nil {
					continue
				}
				if ok, reason := canShare(row, u.row); !ok {
					why = "the IP can no longer be shared: " + reason.detail
					break
				}
			}
		}
		if why != "" {
			e.release(s, a, why)
			continue
		}
		seenFamily[f] = true
	}
}

// setPool records which pool backs a held address now (another, when the
// one it came from was deleted or an older pool took over its block).
func (e *Engine) setPool(s *svcState, a netip.Addr, pool string) {
	for i := range s.held {
		if old := s.held[i].Pool; s.held[i].Addr == a && old != pool {
			s.held[i].Pool = pool
			e.countBacked(a, old, -1)
			e.countBacked(a, pool, 1)
		}
	}
}

// whyNoPool explains why no pool backs a held address any more.
func (e *Engine) whyNoPool(a netip.Addr, row *tables.Service) string {
	for _, p := range e.poolOrder {
		if p.contains(a) && !named(p, row) {
			return notNamedMessage(row)
		}
		if p.contains(a) {
			return fmt.Sprintf("IP Pool '%s' no longer selects this service", p.row.Name)
		}
	}
	return "the IP Pool or block it came from was removed"
}

// fillFamilies gives the Service one address of every wanted family it
// lacks: a shared one under its sharing key if one fits, else the lowest
// free address of the first usable pool that selects it (choice.go).
func (e *Engine) fillFamilies(s *svcState, want []family) (reason, message string) {
	for _, f := range want {
		if slices.ContainsFunc(s.held, func(h tables.AllocatedIP) bool { return familyOf(h.Addr) == f }) {
			continue
		}
		if e.joinShared(s, f) {
			continue
		}
		r, m := e.allocateNew(s, f)
		if r != "" && reason == "" {
			reason, message = r, m
		}
	}
	return reason, message
}

// joinShared looks for an address of family f held under the Service's
// sharing key that it may share, oldest first. Joining takes nothing new
// from a pool, so the address may come from a disabled or conflicting one
// (as in Cilium): those keep what they gave, and what they gave is shared.
// A reserved pool's address is joined only by a Service that names the
// pool (or requests the address, fillRequested): a sharing key alone is no
// claim on a reserved pool, as in MetalLB, where autoAssign: false keeps
// the pool out of every allocation, sharing included.
func (e *Engine) joinShared(s *svcState, f family) bool {
	k := s.row.Annotations.SharingKey
	if k == "" {
		return false
	}
	var candidates []netip.Addr
	for _, o := range e.byKey[k] {
		if o == s {
			continue
		}
		for _, h := range o.held {
			if familyOf(h.Addr) == f && !slices.Contains(candidates, h.Addr) {
				candidates = append(candidates, h.Addr)
			}
		}
	}
	// The address allocated first comes first, as in Cilium, which joins
	// a sharing key's addresses in the order they were handed out.
	slices.SortFunc(candidates, func(a, b netip.Addr) int {
		if c := cmp.Compare(e.ips[a].seq, e.ips[b].seq); c != 0 {
			return c
		}
		return a.Compare(b)
	})
	for _, a := range candidates {
		p := e.poolFor(a, s.row)
		if p == nil || !autoAssigns(p, s.row) || !e.mayJoin(s.row, e.ips[a]) {
			continue
		}
		e.hold(s, a, p.row.Name)
		return true
	}
	return false
}

func (e *Engine) allocateNew(s *svcState, f family) (reason, message string) {
	var selecting, reserved, usable, withFamily []string
	for _, p := range e.choiceOrder {
		if !offers(p, s.row) {
			continue
		}
		selecting = append(selecting, p.row.Name)
		if !autoAssigns(p, s.row) {
			reserved = append(reserved, p.row.Name)
			continue
		}
		if !p.usable() {
			continue
		}
		usable = append(usable, p.row.Name)
		hasFamily := false
		for i, r := range p.ranges {
			if familyOf(p.row.Blocks[i].From) != f {
				continue
			}
			hasFamily = true
			if a, ok := r.Next(); ok {
				e.hold(s, a, p.row.Name)
				return "", ""
			}
		}
		if hasFamily {
			withFamily = append(withFamily, p.row.Name)
		}
	}
	// Cilium's messages, family-blind as Cilium's are: a pool without a
	// block of the family is as if it did not match (herald-dbg explain
	// says which pool lacks what).
	switch {
	case len(usable) == 0 && len(reserved) > 0:
		return tables.ReasonNoPool, reservedMessage(reserved)
	case len(withFamily) == 0:
		return tables.ReasonNoPool, tables.MessageNoPool
	}
	return tables.ReasonOutOfIPs, tables.MessageOutOfIPs
}

func quoteJoin(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, ", ")
}

// sortHeld orders held addresses as the user would read them: requested IPs
// in the order requested, otherwise by family in the Service's order.
func (e *Engine) sortHeld(s *svcState, want []family, requested []netip.Addr) {
	rank := func(a netip.Addr) int {
		if i := slices.Index(requested, a); i >= 0 {
			return i
		}
		if i := slices.Index(want, familyOf(a)); i >= 0 {
			return len(requested) + i
		}
		return len(requested) + len(want)
	}
	slices.SortStableFunc(s.held, func(x, y tables.AllocatedIP) int { return cmp.Compare(rank(x.Addr), rank(y.Addr)) })
}
