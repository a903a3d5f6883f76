package allocator

import (
	"net/netip"
	"slices"
	"time"

	"github.com/heraldlb/herald/cells/internal/poolorder"
	"github.com/heraldlb/herald/cells/lbipam/allocator/iprange"
	"github.com/heraldlb/herald/tables"
)

// Engine is LB IPAM's decision logic: pools and Services go in, the IPs
// each Service holds and each pool's status come out. It does no I/O and is
// not safe for concurrent use; the allocator job owns the only instance.
//
// Invariants:
//   - an address is held by at most one set of Services, and a set of more
//     than one only when every pair of them may share (canShare);
//   - an address in use is marked in the range of every block that contains
//     it, whichever pool it was taken from, so overlapping (conflicting)
//     pools never hand it out twice; only the pool that backs it counts it
//     as used (poolcounts.go);
//   - held addresses are only dropped by evaluating their Service: a pool
//     edit never moves an address that is still valid for its Service.
type Engine struct {
	families Families
	resp     Responsibility

	pools     map[string]*poolState
	poolOrder []*poolState // oldest first; ties broken by name
	// choiceOrder is the order new addresses are looked for in: by the
	// pools' priority, then as poolOrder (choice.go).
	choiceOrder []*poolState

	svcs  map[string]*svcState
	ips   map[netip.Addr]*ipUse
	byKey map[string]map[string]*svcState // sharing key -> services

	dirtySvcs  map[string]struct{}
	dirtyPools map[string]struct{}
	// seq counts addresses held, to order them by age.
	seq uint64
	// freed is set when an address went back to a pool: Services waiting
	// for one are then evaluated again.
	freed bool

	deletedPools []string

	// podPools are the CiliumPodIPPools, under multi-pool IPAM
	// (podpools.go).
	podPools map[string]podPool
}

type poolState struct {
	row    *tables.LBPool
	ranges []*iprange.Range // one per row.Blocks entry
	// conflict is the PoolConflict message; empty when not conflicting.
	conflict string
	// used counts the addresses the pool backs (poolcounts.go).
	used   uint64
	status *tables.LBPoolStatus // last emitted
}

// usable reports whether new addresses may come from the pool.
func (p *poolState) usable() bool { return !p.row.Disabled && p.conflict == "" }

type svcState struct {
	key      string          // namespace/name
	row      *tables.Service // nil once deleted
	held     []tables.AllocatedIP
	decision *tables.LBAllocation // last emitted; nil = no row
	released []tables.ReleasedIP  // since the last emitted decision
}

type ipUse struct {
	// users hold the address, one entry per Service key: one Service
	// nearly always, a few when a sharing key joins them. A slice, not a
	// map: the engine keeps one ipUse per address it gave out.
	users []*svcState
	// seq orders addresses by when they were first held (lower = older).
	seq uint64
}

// index is the position of the Service key's entry in users, or -1.
func (u *ipUse) index(key string) int {
	return slices.IndexFunc(u.users, func(s *svcState) bool { return s.key == key })
}

// NewEngine returns an empty engine.
func NewEngine(fams Families, resp Responsibility) *Engine {
	return &Engine{
		families:   fams,
		resp:       resp,
		pools:      map[string]*poolState{},
		podPools:   map[string]podPool{},
		svcs:       map[string]*svcState{},
		ips:        map[netip.Addr]*ipUse{},
		byKey:      map[string]map[string]*svcState{},
		dirtySvcs:  map[string]struct{}{},
		dirtyPools: map[string]struct{}{},
	}
}

// UpsertPool adds or replaces a pool. Every Service is evaluated again, as
// a pool edit can add room, change selectors or remove blocks; a new row
// with the same spec (its status was written) changes nothing.
func (e *Engine) UpsertPool(row *tables.LBPool) {
	old := e.pools[row.Name]
	if old != nil && old.row.SameSpec(row) {
		old.row = row
		return
	}
	p := &poolState{row: row}
	if old != nil {
		p.status = old.status
	}
	for _, b := range row.Blocks {
		r := iprange.New(b.From, b.To, !row.AllowFirstLastIPs && b.IsCIDR())
		p.ranges = append(p.ranges, r)
	}
	// Addresses already in use stay in use in the new ranges.
	for a := range e.ips {
		for _, r := range p.ranges {
			if r.Contains(a) {
				_ = r.Claim(a, true)
			}
		}
	}
	e.pools[row.Name] = p
	e.recountBacked(p)
	e.reorderPools()
	e.poolsChanged()
}

// DeletePool removes a pool. Its addresses are released when their Services
// are evaluated and no other pool that selects them contains the address.
func (e *Engine) DeletePool(name string) {
	if _, ok := e.pools[name]; !ok {
		return
	}
	delete(e.pools, name)
	e.deletedPools = append(e.deletedPools, name)
	e.reorderPools()
	e.poolsChanged()
}

func (e *Engine) reorderPools() {
	e.poolOrder = poolorder.Sorted(e.poolOrder, e.pools, func(p *poolState) (time.Time, string) {
		return p.row.CreationTimestamp, p.row.Name
	})
	e.choiceOrder = byPriority(e.choiceOrder, e.poolOrder)
}

func (e *Engine) poolsChanged() {
	e.detectConflicts()
	for name := range e.pools {
		e.dirtyPools[name] = struct{}{}
	}
	for key := range e.svcs {
		e.dirtySvcs[key] = struct{}{}
	}
}

// UpsertService adds or updates a Service; it is evaluated at the next
// Evaluate.
func (e *Engine) UpsertService(row *tables.Service) {
	key := row.Key()
	s := e.svcs[key]
	if s == nil {
		s = &svcState{key: key}
		e.svcs[key] = s
	}
	if s.row != nil {
		e.unindexKey(s)
	}
	s.row = row
	if k := row.Annotations.SharingKey; k != "" {
		if e.byKey[k] == nil {
			e.byKey[k] = map[string]*svcState{}
		}
		e.byKey[k][key] = s
	}
	e.dirtySvcs[key] = struct{}{}
}

// DeleteService forgets a Service and releases its addresses.
func (e *Engine) DeleteService(key string) {
	s := e.svcs[key]
	if s == nil {
		return
	}
	e.unindexKey(s)
	s.row = nil
	e.dirtySvcs[key] = struct{}{}
}

func (e *Engine) unindexKey(s *svcState) {
	if k := s.row.Annotations.SharingKey; k != "" {
		delete(e.byKey[k], s.row.Key())
		if len(e.byKey[k]) == 0 {
			delete(e.byKey, k)
		}
	}
}

// Restore re-imports the addresses a Service already has in its status, so
// that a restart or a leader change never re-IPs anything. Call it for every
// Service, oldest first, after the pools and before the first Evaluate: when
// two Services claim one address without being allowed to share it, the
// older keeps it and the younger gets a new one.
func (e *Engine) Restore(row *tables.Service) {
	e.UpsertService(row)
	if !e.resp.Handles(row) {
		return
	}
	s := e.svcs[row.Key()]
	for _, a := range row.IngressIPs {
		if slices.ContainsFunc(s.held, func(h tables.AllocatedIP) bool { return h.Addr == a }) {
			continue
		}
		p := e.poolFor(a, row)
		if p == nil {
			continue // evaluation reports it released
		}
		if use := e.ips[a]; use != nil && !e.mayJoin(row, use) {
			continue
		}
		e.hold(s, a, p.row.Name)
	}
}

// mayJoin reports whether the Service may share an address with all of its
// current users.
func (e *Engine) mayJoin(row *tables.Service, use *ipUse) bool {
	for _, u := range use.users {
		if u.row == nil || u.row.Key() == row.Key() {
			continue
		}
		if ok, _ := canShare(row, u.row); !ok {
			return false
		}
	}
	return true
}

// poolFor returns the first pool, oldest first, that contains the address
// and offers it to the Service, whatever its state (disabled or conflicting
// pools keep what they gave).
func (e *Engine) poolFor(a netip.Addr, row *tables.Service) *poolState {
	for _, p := range e.poolOrder {
		if p.contains(a) && offers(p, row) {
			return p
		}
	}
	return nil
}

func (p *poolState) contains(a netip.Addr) bool {
	for _, r := range p.ranges {
		if r.Contains(a) {
			return true
		}
	}
	return false
}

// hold records that the Service holds the address.
func (e *Engine) hold(s *svcState, a netip.Addr, pool string) {
	use := e.ips[a]
	if use == nil {
		e.seq++
		use = &ipUse{seq: e.seq}
		e.ips[a] = use
		e.markEverywhere(a, true)
	}
	if i := use.index(s.key); i >= 0 {
		use.users[i] = s
	} else {
		use.users = append(use.users, s)
	}
	s.held = append(s.held, tables.AllocatedIP{Addr: a, Pool: pool})
	e.countBacked(a, pool, 1)
}

// drop removes the Service from the address's users; the last user frees it.
func (e *Engine) drop(s *svcState, a netip.Addr) {
	var pools []string
	s.held = slices.DeleteFunc(s.held, func(h tables.AllocatedIP) bool {
		if h.Addr == a {
			pools = append(pools, h.Pool)
		}
		return h.Addr == a
	})
	for _, pool := range pools {
		e.countBacked(a, pool, -1)
	}
	use := e.ips[a]
	if use == nil {
		return
	}
	if i := use.index(s.key); i >= 0 {
		use.users = slices.Delete(use.users, i, i+1)
	}
	if len(use.users) == 0 {
		delete(e.ips, a)
		e.markEverywhere(a, false)
		e.freed = true
	}
}

// markEverywhere claims or releases the address in every block holding it.
func (e *Engine) markEverywhere(a netip.Addr, inUse bool) {
	for _, p := range e.poolOrder {
		for _, r := range p.ranges {
			if !r.Contains(a) {
				continue
			}
			if inUse {
				_ = r.Claim(a, true)
			} else {
				r.Release(a)
			}
			e.dirtyPools[p.row.Name] = struct{}{}
		}
	}
}

// Knows reports whether the engine has seen the Service.
func (e *Engine) Knows(key string) bool { return e.svcs[key] != nil }
