package allocator

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/heraldlb/herald/tables"
)

// IPs a Service requests (lbipam.cilium.io/ips, spec.loadBalancerIP):
// claimed for it, shared, or refused with the reason its condition shows.

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

func (e *Engine) claimRequested(s *svcState, a netip.Addr) (reason, message string) {
	// A requested address is given whatever its family: the family flags
	// only decide what a Service gets when it does not say (as in Cilium).
	row := s.row
	var containing, selecting []*poolState
	for _, p := range e.poolOrder {
		if p.contains(a) && named(p, row) {
			containing = append(containing, p)
			if p.row.Selects(row) {
				selecting = append(selecting, p)
			}
		}
	}
	switch {
	case len(containing) == 0 && row.Annotations.Pool != "":
		return tables.ReasonNoPool, fmt.Sprintf("The requested IP '%s' is not in IP Pool '%s' named by annotation %s", a, row.Annotations.Pool, row.Annotations.PoolAnnotation)
	case len(containing) == 0:
		return tables.ReasonNoPool, fmt.Sprintf("There are no CiliumLoadBalancerIPPools that contain the requested IP '%s'", a)
	case len(selecting) == 0:
		return tables.ReasonPoolSelectorMismatch, fmt.Sprintf("The requested IP '%s' is in IP Pool '%s', whose serviceSelector does not match this service", a, containing[0].row.Name)
	}
	var pool *poolState
	for _, p := range selecting {
		if p.usable() {
			pool = p
			break
		}
	}
	if pool == nil {
		p := selecting[0]
		state := "disabled"
		if p.conflict != "" {
			state = "conflicting"
		}
		return tables.ReasonNoPool, fmt.Sprintf("The requested IP '%s' is in IP Pool '%s', which is %s", a, p.row.Name, state)
	}
	if use := e.ips[a]; use != nil {
		for _, u := range sortedUsers(use) {
			if u.row == nil {
				continue
			}
			if ok, why := canShare(row, u.row); !ok {
				if row.Annotations.SharingKey == "" || u.row.Annotations.SharingKey != row.Annotations.SharingKey {
					return tables.ReasonAlreadyAllocated, fmt.Sprintf("The requested IP '%s' is already allocated to service '%s'", a, u.row.Key())
				}
				return tables.ReasonAlreadyAllocatedIncompat, fmt.Sprintf("The requested IP '%s' is shared with service '%s', which is incompatible: %s", a, u.row.Key(), why)
			}
		}
		e.hold(s, a, pool.row.Name)
		return "", ""
	}
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
