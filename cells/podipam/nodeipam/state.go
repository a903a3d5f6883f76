package nodeipam

import (
	"fmt"
	"iter"
	"net/netip"
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
	// shortfallGens are the generations of the pools when their
	// shortfalls arrived: an answer about an older spec does not refuse
	// an ADD (current).
	shortfallGens map[poolFamily]int64

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
	// synced: the node's CIDRs are those its CiliumNode lists (setCIDRs
	// ran once); before that the node knows neither its CIDRs nor its
	// pools. becameReady: ready() said yes once (ready.go).
	synced, becameReady bool
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
		shortfallGens: map[poolFamily]int64{},
		cidrs:         map[netip.Prefix]*nodeCIDR{}, order: map[poolFamily][]netip.Prefix{},
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
	s.synced = true
	s.notify()
	sort.Strings(gone)
	return gone
}
