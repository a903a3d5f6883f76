package allocator

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/heraldlb/herald/tables"
)

// IPs a Service requests (lbipam.cilium.io/ips, spec.loadBalancerIP):
// claimed for it, shared, or refused with the reason its condition shows.
// The messages are Cilium's where Cilium has the case; they name no other
// Service, so a tenant learns nothing there about other namespaces
// (herald-dbg explain gives the details).

// fillRequested gives the Service each requested address it does not hold.
// It returns the reason and message of the first failure, if any.
func (e *Engine) fillRequested(s *svcState, requested []netip.Addr) (reason, message string) {
	for _, a := range requested {
		if slices.ContainsFunc(s.held, func(h tables.AllocatedIP) bool { return h.Addr == a }) {
			continue
		}
		r, m := e.claimRequested(s, a)
		if r != "" && reason == "" {
			reason, message = r, m
		}
	}
	return reason, message
}

// claimRequested gives the Service a requested address: it joins the
// Services that hold it, or takes it from a pool if it is free.
func (e *Engine) claimRequested(s *svcState, a netip.Addr) (reason, message string) {
	// A requested address is given whatever its family: the family flags
	// only decide what a Service gets when it does not say (as in Cilium).
	if use := e.ips[a]; use != nil {
		return e.joinRequested(s, a, use)
	}
	return e.claimFree(s, a)
}

// requestedPools returns the pools the Service accepts by name that contain
// the address, and those of them that select it; with usableOnly, only the
// pools that may hand out new addresses.
func (e *Engine) requestedPools(row *tables.Service, a netip.Addr, usableOnly bool) (containing, selecting []*poolState) {
	for _, p := range e.poolOrder {
		if !p.contains(a) || !named(p, row) || (usableOnly && !p.usable()) {
			continue
		}
		containing = append(containing, p)
		if p.row.Selects(row) {
			selecting = append(selecting, p)
		}
	}
	return containing, selecting
}

// poolProblem is the reason and message when no pool may give the address:
// placed are the pools that contain it (of the one the Service names, if
// any), whatever their state; containing are those of them that may serve,
// selecting those of them that select the Service.
func poolProblem(row *tables.Service, a netip.Addr, placed, containing, selecting []*poolState) (reason, message string) {
	switch {
	case len(placed) == 0 && row.Annotations.Pool != "":
		return tables.ReasonNoPool, fmt.Sprintf("The requested IP '%s' is not in IP Pool '%s' named by annotation %s", a, row.Annotations.Pool, row.Annotations.PoolAnnotation)
	case len(containing) == 0:
		return tables.ReasonNoPool, fmt.Sprintf("No pool exists with a CIDR containing '%s'", a)
	case len(selecting) == 0:
		return tables.ReasonPoolSelectorMismatch, fmt.Sprintf("The pool with the CIDR containing '%s', doesn't select this service", a)
	}
	return "", ""
}

// joinRequested adds the Service to the holders of an address in use. It
// takes nothing new from a pool, so the pool may be disabled or
// conflicting: those keep what they gave, and what they gave may be
// shared. Without a sharing key the Service may not join anyone.
func (e *Engine) joinRequested(s *svcState, a netip.Addr, use *ipUse) (reason, message string) {
	row := s.row
	containing, selecting := e.requestedPools(row, a, false)
	if r, m := poolProblem(row, a, containing, containing, selecting); r != "" {
		return r, m
	}
	for _, u := range sortedUsers(use) {
		if u.row == nil || u == s {
			continue
		}
		if row.Annotations.SharingKey == "" {
			return tables.ReasonAlreadyAllocated, fmt.Sprintf("The IP '%s' is already allocated to another service", a)
		}
		if ok, why := canShare(row, u.row); !ok {
			return tables.ReasonAlreadyAllocatedIncompat, incompatibleMessage(a, why)
		}
	}
	e.hold(s, a, selecting[0].row.Name)
	return "", ""
}

// claimFree takes a free address from the first pool that may hand it out.
// As in Cilium, a disabled or conflicting pool is as if it did not exist.
func (e *Engine) claimFree(s *svcState, a netip.Addr) (reason, message string) {
	row := s.row
	placed, _ := e.requestedPools(row, a, false)
	containing, selecting := e.requestedPools(row, a, true)
	if r, m := poolProblem(row, a, placed, containing, selecting); r != "" {
		return r, m
	}
	pool := selecting[0]
	for i, r := range pool.ranges {
		if r.Contains(a) && !r.Allocatable(a) {
			return tables.ReasonNoPool, fmt.Sprintf("The requested IP '%s' is the reserved first or last IP of %s in IP Pool '%s' (allowFirstLastIPs: No)", a, pool.row.Blocks[i].Describe(), pool.row.Name)
		}
	}
	e.hold(s, a, pool.row.Name)
	return "", ""
}

func sortedUsers(use *ipUse) []*svcState {
	out := slices.Clone(use.users)
	slices.SortFunc(out, olderFirst)
	return out
}
