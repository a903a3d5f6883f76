package nodeipam

import (
	"errors"
	"fmt"
	"iter"
	"net/netip"
	"slices"
	"sort"
	"time"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

// store is where allocations are journaled (journal; a map in tests).
type store interface {
	put(entry) error
	remove(netip.Addr) error
}

// poolFamily names the CIDRs of one pool and family on this node.
type poolFamily struct {
	pool string
	fam  tables.Family
}

// nodeCIDR is one of this node's pod CIDRs.
type nodeCIDR struct {
	pool  string
	addrs *cidrAddrs
	// gone: the CiliumNode no longer lists it although addresses of it are
	// in use (edited by hand). Nothing new comes from it.
	gone bool
	// releasing: the agent is removing it from its CiliumNode.
	releasing bool
	// draining: its pool no longer has it (removed from the pool's CIDRs,
	// the pool being deleted or gone). Nothing new comes from it; it is
	// released as soon as its last address is.
	draining bool
	// emptySince is when its last address was released (zero: in use).
	emptySince time.Time
}

// state is this node's pod address management: the node's CIDRs, what is
// allocated from them, and what is waiting for more. No Kubernetes I/O; the
// journal is its only side effect. Not safe for concurrent use: the cell
// serializes every call.
type state struct {
	store    store
	families []tables.Family // enabled, IPv4 first
	pre      map[string]int  // ipam-multi-pool-pre-allocation
	now      func() time.Time

	// pools are the CiliumPodIPPools, by name (setPools).
	pools map[string]*tables.PodIPPool
	// shortfalls are what the allocator said it cannot give this node,
	// per pool and family (setShortfalls).
	shortfalls map[poolFamily]tables.PodCIDRShortfall

	cidrs        map[netip.Prefix]*nodeCIDR
	order        map[poolFamily][]netip.Prefix // as listed in the CiliumNode
	allocs       map[netip.Addr]entry
	byAttachment map[ipamv1.Attachment][]netip.Addr
	// orphans are journaled addresses whose CIDR the CiliumNode does not
	// list (yet): held, never handed out again, reported.
	orphans map[netip.Addr]entry
	// pending are ADDs waiting for a CIDR, by pool and family, with when
	// they stop counting (the runtime retries a failed ADD; until then the
	// demand stays up so that the CIDR arrives).
	pending map[poolFamily]map[ipamv1.Attachment]time.Time
	// changed is closed (and replaced) whenever CIDRs or allocations change.
	changed chan struct{}
	// removed are CIDRs that left the node since takeRemoved was last
	// called: their gateways go.
	removed []netip.Prefix
}

// takeRemoved returns the CIDRs that left the node since the last call.
func (s *state) takeRemoved() []netip.Prefix {
	r := s.removed
	s.removed = nil
	return r
}

// pendingTTL is how long a waiting ADD keeps counting in the demand.
const pendingTTL = 5 * time.Minute

func newState(s store, families []tables.Family, pre map[string]int, now func() time.Time) *state {
	return &state{
		store: s, families: families, pre: pre, now: now,
		pools: map[string]*tables.PodIPPool{}, shortfalls: map[poolFamily]tables.PodCIDRShortfall{},
		cidrs: map[netip.Prefix]*nodeCIDR{}, order: map[poolFamily][]netip.Prefix{},
		allocs: map[netip.Addr]entry{}, byAttachment: map[ipamv1.Attachment][]netip.Addr{},
		orphans: map[netip.Addr]entry{}, pending: map[poolFamily]map[ipamv1.Attachment]time.Time{},
		changed: make(chan struct{}),
	}
}

func (s *state) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// restore takes back what the journal holds. Call once, before anything
// else: nothing is released or handed out before the node knows what it
// handed out before.
func (s *state) restore(entries []entry) {
	for _, e := range entries {
		// Indexed by attachment at once: a DEL (or one the plugin queued
		// while the agent was down) releases it even before its CIDR is
		// known again.
		s.orphans[e.IP] = e
		s.byAttachment[e.Attachment] = append(s.byAttachment[e.Attachment], e.IP)
	}
	s.adoptOrphans()
}

func (s *state) adoptOrphans() {
	for ip, e := range s.orphans {
		c := s.cidrs[e.CIDR]
		if c == nil || !c.addrs.claim(ip) {
			continue
		}
		delete(s.orphans, ip)
		s.allocs[ip] = e
		c.emptySince = time.Time{}
	}
}

// lookup returns the allocation of an address, adopted or orphaned.
func (s *state) lookup(ip netip.Addr) (entry, bool) {
	if e, ok := s.allocs[ip]; ok {
		return e, true
	}
	e, ok := s.orphans[ip]
	return e, ok
}

// all yields every journaled allocation, adopted or orphaned.
func (s *state) all() iter.Seq[entry] {
	return func(yield func(entry) bool) {
		for _, e := range s.allocs {
			if !yield(e) {
				return
			}
		}
		for _, e := range s.orphans {
			if !yield(e) {
				return
			}
		}
	}
}

func (s *state) record(e entry) {
	s.allocs[e.IP] = e
	s.byAttachment[e.Attachment] = append(s.byAttachment[e.Attachment], e.IP)
}

// setCIDRs makes the node's CIDRs those its CiliumNode lists. A CIDR that
// disappears while addresses of it are in use stays, marked gone: its pods
// keep their addresses, and the problem is reported.
func (s *state) setCIDRs(allocated []tables.PoolCIDRs) (gone []string) {
	listed := map[netip.Prefix]string{}
	for _, a := range allocated {
		for _, c := range a.CIDRs {
			listed[c] = a.Pool
		}
	}
	for p, c := range s.cidrs {
		if _, ok := listed[p]; ok {
			c.gone = false
			continue
		}
		if c.addrs.inUse() > 0 {
			if !c.gone {
				c.gone = true
			}
			gone = append(gone, fmt.Sprintf("%s (pool %q, %d addresses in use)", p, c.pool, c.addrs.inUse()))
			continue
		}
		delete(s.cidrs, p)
		s.removed = append(s.removed, p)
	}
	clear(s.order)
	for _, a := range allocated {
		for _, p := range a.CIDRs {
			c := s.cidrs[p]
			if c == nil {
				c = &nodeCIDR{pool: a.Pool, addrs: newCIDRAddrs(p), emptySince: s.now()}
				c.draining = !s.servesFrom(a.Pool, p)
				s.cidrs[p] = c
			}
			// releasing stays until the release's outcome is known (keep,
			// or the CiliumNode no longer listing it): an update of the
			// CiliumNode racing the release must not reopen the CIDR.
			pf := poolFamily{a.Pool, tables.FamilyOf(p.Addr())}
			s.order[pf] = append(s.order[pf], p)
		}
	}
	s.adoptOrphans()
	s.notify()
	sort.Strings(gone)
	return gone
}

// errNoRoom: the node has no free address in the pool; the caller waits
// for a CIDR (the demand now includes this ADD) or gives up.
var errNoRoom = errors.New("no free address on this node")

// shortfallError: the node has no free address in the pool and the
// allocator already said it cannot give the node what it now asks for
// (exhausted, conflicting or deleted pool). Waiting would not help.
type shortfallError struct{ tables.PodCIDRShortfall }

func (e *shortfallError) Error() string {
	return fmt.Sprintf("no free %s address of pool %q on this node, and the allocator cannot add one: %s", e.Family, e.Pool, e.PodCIDRShortfall)
}

// add gives the attachment one address per enabled family from the chosen
// pools, or returns the addresses it already has (a repeated ADD). On
// errNoRoom nothing is allocated and the ADD counts as pending.
func (s *state) add(req ipamv1.AddRequest, pools map[tables.Family]string) ([]entry, error) {
	if ips := s.byAttachment[req.Attachment]; len(ips) > 0 {
		return s.entries(ips), nil
	}
	var got []entry
	undo := func() {
		for _, e := range got {
			_ = s.store.remove(e.IP)
			s.forget(e)
		}
	}
	for _, f := range s.families {
		pf := poolFamily{pools[f], f}
		e, err := s.allocateOne(req, pf)
		if err != nil {
			undo()
			if errors.Is(err, errNoRoom) {
				if s.pending[pf] == nil {
					s.pending[pf] = map[ipamv1.Attachment]time.Time{}
				}
				s.pending[pf][req.Attachment] = s.now().Add(pendingTTL)
				// The allocator answered a demand that already counts
				// this ADD: it is refused for the allocator's reason.
				if sf, ok := s.shortfalls[pf]; ok && sf.Requested >= uint64(s.needs(pf)) {
					return nil, &shortfallError{sf}
				}
			}
			return nil, err
		}
		got = append(got, e)
	}
	for pf := range s.pending {
		delete(s.pending[pf], req.Attachment)
	}
	s.notify()
	return got, nil
}

func (s *state) allocateOne(req ipamv1.AddRequest, pf poolFamily) (entry, error) {
	for _, p := range s.order[pf] {
		c := s.cidrs[p]
		if c == nil || !c.servesNew() {
			continue
		}
		for {
			ip, ok := c.addrs.allocate()
			if !ok {
				break
			}
			e := entry{IP: ip, CIDR: p, Pool: pf.pool, Network: req.Network, Pod: req.Pod, Attachment: req.Attachment, Since: s.now()}
			err := s.store.put(e)
			if errors.Is(err, errTaken) {
				continue // journaled by a run we do not know of: leave it taken
			}
			if err != nil {
				c.addrs.release(ip)
				return entry{}, err
			}
			c.emptySince = time.Time{}
			s.record(e)
			return e, nil
		}
	}
	return entry{}, fmt.Errorf("%w in pool %q (%s)", errNoRoom, pf.pool, pf.fam)
}

func (s *state) entries(ips []netip.Addr) []entry {
	out := make([]entry, 0, len(ips))
	for _, ip := range ips {
		if e, ok := s.lookup(ip); ok {
			out = append(out, e)
		}
	}
	return out
}

// del releases the attachment's addresses; an unknown attachment is fine.
func (s *state) del(a ipamv1.Attachment) ([]entry, error) {
	for pf := range s.pending {
		delete(s.pending[pf], a)
	}
	ips := slices.Clone(s.byAttachment[a])
	var released []entry
	for _, ip := range ips {
		e, ok := s.lookup(ip)
		if !ok {
			continue
		}
		if err := s.store.remove(ip); err != nil {
			return released, err
		}
		s.forget(e)
		released = append(released, e)
	}
	if len(released) > 0 {
		s.notify()
	}
	return released, nil
}

func (s *state) forget(e entry) {
	if _, orphan := s.orphans[e.IP]; orphan {
		delete(s.orphans, e.IP)
		s.dropFromAttachment(e)
		return
	}
	delete(s.allocs, e.IP)
	s.dropFromAttachment(e)
	if c := s.cidrs[e.CIDR]; c != nil {
		c.addrs.release(e.IP)
		if c.addrs.inUse() == 0 {
			c.emptySince = s.now()
			if c.gone {
				delete(s.cidrs, e.CIDR)
				s.removed = append(s.removed, e.CIDR)
			}
		}
	}
}

func (s *state) dropFromAttachment(e entry) {
	rest := slices.DeleteFunc(slices.Clone(s.byAttachment[e.Attachment]), func(ip netip.Addr) bool { return ip == e.IP })
	if len(rest) == 0 {
		delete(s.byAttachment, e.Attachment)
	} else {
		s.byAttachment[e.Attachment] = rest
	}
}

// check reports whether the attachment holds exactly these addresses.
func (s *state) check(a ipamv1.Attachment, want []netip.Addr) error {
	have := slices.Clone(s.byAttachment[a])
	slices.SortFunc(have, netip.Addr.Compare)
	want = slices.Clone(want)
	slices.SortFunc(want, netip.Addr.Compare)
	if !slices.Equal(have, want) {
		return fmt.Errorf("attachment %s/%s holds %v, not %v", a.ContainerID, a.IfName, have, want)
	}
	return nil
}

// gc releases every allocation of the network whose attachment the runtime
// no longer knows.
func (s *state) gc(network string, valid []ipamv1.Attachment) ([]entry, error) {
	keep := map[ipamv1.Attachment]bool{}
	for _, a := range valid {
		keep[a] = true
	}
	var released []entry
	for a, ips := range s.byAttachment {
		if keep[a] || len(ips) == 0 {
			continue
		}
		if e, ok := s.lookup(ips[0]); !ok || e.Network != network {
			continue
		}
		rs, err := s.del(a)
		released = append(released, rs...)
		if err != nil {
			return released, err
		}
	}
	return released, nil
}

// usage counts addresses in use and pending ADDs per pool and family.
func (s *state) usage() (inUse, pending map[poolFamily]int) {
	inUse, pending = map[poolFamily]int{}, map[poolFamily]int{}
	for _, e := range s.allocs {
		inUse[poolFamily{e.Pool, tables.FamilyOf(e.IP)}]++
	}
	for _, e := range s.orphans {
		inUse[poolFamily{e.Pool, tables.FamilyOf(e.IP)}]++
	}
	now := s.now()
	for pf, waiting := range s.pending {
		for a, until := range waiting {
			if now.After(until) {
				delete(waiting, a)
				continue
			}
			pending[pf]++
		}
	}
	return inUse, pending
}

// capacity counts, per pool and family, the usable addresses of the CIDRs
// that still hand out (not gone, not being released) and the CIDRs held.
func (s *state) capacity() (usable map[poolFamily]uint64, cidrs map[poolFamily]int) {
	usable, cidrs = map[poolFamily]uint64{}, map[poolFamily]int{}
	for p, c := range s.cidrs {
		pf := poolFamily{c.pool, tables.FamilyOf(p.Addr())}
		cidrs[pf]++
		if c.servesNew() {
			usable[pf] += c.addrs.usable()
		}
	}
	return usable, cidrs
}

// waiting reports whether an ADD waits for a CIDR right now.
func (s *state) waiting() bool {
	_, pending := s.usage()
	for _, n := range pending {
		if n > 0 {
			return true
		}
	}
	return false
}

// demand computes spec.ipam.pools.requested: for every pool in use,
// waited for, or with a pre-allocation, the spec's formula per family the
// agent runs (needsOf); pools that can give nothing are left out.
func (s *state) demand() []tables.PoolDemand {
	inUse, pending := s.usage()
	names := map[string]bool{}
	for pf, n := range inUse {
		if n > 0 {
			names[pf.pool] = true
		}
	}
	for pf, n := range pending {
		if n > 0 {
			names[pf.pool] = true
		}
	}
	for name, n := range s.pre {
		if n > 0 && s.pools[name] != nil {
			names[name] = true
		}
	}
	var out []tables.PoolDemand
	for _, name := range sortedSet(names) {
		d := tables.PoolDemand{Pool: name}
		for _, f := range s.families {
			pf := poolFamily{name, f}
			n := s.needsOf(pf, inUse[pf], pending[pf])
			if f == tables.IPv4 {
				d.IPv4 = n
			} else {
				d.IPv6 = n
			}
		}
		if d.IPv4 > 0 || d.IPv6 > 0 {
			out = append(out, d)
		}
	}
	return out
}

// needs is how many addresses of one pool and family the node asks for.
func (s *state) needs(pf poolFamily) int {
	inUse, pending := s.usage()
	return s.needsOf(pf, inUse[pf], pending[pf])
}

// needsOf applies the spec's formula (needed), and asks nothing of a pool
// that can give nothing: one that is gone, being deleted, or has no CIDRs
// of the family. Its pre-allocation would otherwise keep a deleted pool
// alive (the node holding a CIDR of it), or report an error for good (an
// IPv4-only pool pre-allocated on a dual-stack node). Its pods keep their
// addresses, and an ADD for it is refused before it waits.
func (s *state) needsOf(pf poolFamily, inUse, pending int) int {
	p := s.pools[pf.pool]
	if p == nil || p.Deleting || p.Family(pf.fam) == nil {
		return 0
	}
	return needed(inUse, pending, s.pre[pf.pool])
}

// releasable returns the CIDRs the node can give back: draining and
// empty, or empty for at least settle and not needed to cover the demand
// of their pool and family with the CIDRs that stay. It marks them releasing: nothing is allocated
// from them any more (unmark with keep if the release fails).
func (s *state) releasable(demand []tables.PoolDemand, settle time.Duration) []tables.PoolCIDRs {
	want := map[poolFamily]int{}
	for _, d := range demand {
		for _, f := range s.families {
			want[poolFamily{d.Pool, f}] = d.Of(f)
		}
	}
	now := s.now()
	var out []tables.PoolCIDRs
	for pf, ps := range s.order {
		capacity := uint64(0)
		for _, p := range ps {
			if c := s.cidrs[p]; c != nil && c.servesNew() {
				capacity += c.addrs.usable()
			}
		}
		// Release the last listed first: the first CIDRs stay the node's.
		for i := len(ps) - 1; i >= 0; i-- {
			c := s.cidrs[ps[i]]
			if c == nil || c.gone || c.releasing || c.addrs.inUse() > 0 {
				continue
			}
			if c.draining {
				// Its pool no longer has it: nothing can come from it
				// again, so it goes at once.
				c.releasing = true
				out = addPoolCIDR(out, pf.pool, ps[i])
				continue
			}
			if c.emptySince.IsZero() || now.Sub(c.emptySince) < settle {
				continue
			}
			if capacity-c.addrs.usable() < uint64(want[pf]) {
				continue
			}
			capacity -= c.addrs.usable()
			c.releasing = true
			out = addPoolCIDR(out, pf.pool, ps[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out
}

// inUseCIDRs are the CIDRs holding an address the journal knows, adopted
// or orphaned, by pool: what the node must keep whatever its CiliumNode
// says.
func (s *state) inUseCIDRs() []tables.PoolCIDRs {
	seen := map[netip.Prefix]bool{}
	var out []tables.PoolCIDRs
	for e := range s.all() {
		if !seen[e.CIDR] {
			seen[e.CIDR] = true
			out = addPoolCIDR(out, e.Pool, e.CIDR)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	for _, a := range out {
		slices.SortFunc(a.CIDRs, func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) })
	}
	return out
}

// keep takes back CIDRs marked releasing whose release did not go through.
func (s *state) keep(cs []tables.PoolCIDRs) {
	for _, a := range cs {
		for _, p := range a.CIDRs {
			if c := s.cidrs[p]; c != nil {
				c.releasing = false
			}
		}
	}
}

// ready reports whether an ADD into the default pool can succeed without
// waiting: the node has a CIDR of it, with room, in every family.
func (s *state) ready() (bool, string) {
	for _, f := range s.families {
		pf := poolFamily{tables.DefaultPodIPPool, f}
		if !slices.ContainsFunc(s.order[pf], func(p netip.Prefix) bool { return s.cidrs[p] != nil && s.cidrs[p].servesNew() }) {
			return false, fmt.Sprintf("this node has no %s CIDR of the pool %q yet", f, tables.DefaultPodIPPool)
		}
	}
	return true, ""
}

func addPoolCIDR(out []tables.PoolCIDRs, pool string, p netip.Prefix) []tables.PoolCIDRs {
	for i := range out {
		if out[i].Pool == pool {
			out[i].CIDRs = append(out[i].CIDRs, p)
			return out
		}
	}
	return append(out, tables.PoolCIDRs{Pool: pool, CIDRs: []netip.Prefix{p}})
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
