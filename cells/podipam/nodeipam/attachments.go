package nodeipam

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

// Handing addresses out and taking them back: ADD, DEL, CHECK and GC of
// the CNI plugin, on the node's state.

// errNoRoom: the node has no free address in the pool; the caller waits
// for a CIDR (the demand now includes this ADD) or gives up.
var errNoRoom = errors.New("no free address on this node")

// shortfallError: the node has no free address in the pool and the
// allocator already said it cannot give the node what it now asks for
// (exhausted, conflicting or deleted pool, or one whose maskSize leaves
// no address for pods). Waiting would not help.
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
	for i, f := range s.families {
		pf := poolFamily{pools[f], f}
		e, err := s.allocateOne(req, pf)
		if err != nil {
			undo()
			if errors.Is(err, errNoRoom) {
				return nil, s.waitForRoom(req, pools, s.families[i:], err)
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

// waitForRoom counts the ADD as pending in the first family of fams,
// which has no room, and in every later one that has none either, so that
// the node asks for all the CIDRs it lacks at once (a new pool's first pod
// on a dual-stack node waits for one round trip to the allocator, not
// one per family). It returns the allocator's reason if it already said
// it cannot give what the node asks now, this ADD included; else err (the
// ADD waits).
func (s *state) waitForRoom(req ipamv1.AddRequest, pools map[tables.Family]string, fams []tables.Family, err error) error {
	var waiting []poolFamily
	for i, f := range fams {
		pf := poolFamily{pools[f], f}
		if i > 0 && s.hasRoom(pf) {
			continue
		}
		if s.pending[pf] == nil {
			s.pending[pf] = map[ipamv1.Attachment]time.Time{}
		}
		s.pending[pf][req.Attachment] = s.now().Add(pendingTTL)
		waiting = append(waiting, pf)
	}
	for _, pf := range waiting {
		// The allocator answered a demand that already counts this ADD.
		if sf, ok := s.currentShortfall(pf); ok && sf.Requested >= uint64(s.needs(pf)) {
			return &shortfallError{sf}
		}
	}
	return err
}

// hasRoom reports whether a CIDR of the pool and family that serves new
// addresses has one free.
func (s *state) hasRoom(pf poolFamily) bool {
	for _, p := range s.order[pf] {
		if c := s.cidrs[p]; c != nil && c.servesNew() && uint64(c.addrs.inUse()) < c.addrs.usable() {
			return true
		}
	}
	return false
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
