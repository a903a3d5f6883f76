package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/cilium/ebpf"
)

// The responder's maps: the entries it answers for, and the conflicts it
// saw (another host answering for one of them).

var errClosed = errors.New("bpf: responder is closed")

// mapKey returns the map for ip's family and ip's key in it.
func (r *Responder) mapKey(ip netip.Addr, ifindex int) (*ebpf.Map, any, error) {
	if ifindex <= 0 || ifindex > int(^uint32(0)>>1) {
		return nil, nil, fmt.Errorf("bpf: invalid ifindex %d", ifindex)
	}
	ip = ip.Unmap()
	switch {
	case ip.Is4():
		b := ip.As4()
		// Network byte order in memory, whatever the host's byte order.
		return r.v4, &l2responderL2ResponderKey{Ip4: binary.NativeEndian.Uint32(b[:]), Ifindex: uint32(ifindex)}, nil
	case ip.Is6() && ip.Zone() == "":
		return r.v6, &l2responderL2ResponderKey6{Ip6: ip.As16(), Ifindex: uint32(ifindex)}, nil
	}
	return nil, nil, fmt.Errorf("bpf: %v is not an IPv4 or IPv6 address without zone", ip)
}

// Upsert makes the responder answer ARP requests (IPv4) or Neighbor
// Solicitations (IPv6) for ip arriving on ifindex with mac, and reports
// whether the entry is new. An existing entry keeps its responses_sent
// counter (a reply sent while the entry is rewritten may go uncounted).
func (r *Responder) Upsert(ip netip.Addr, ifindex int, mac net.HardwareAddr) (created bool, err error) {
	if len(mac) != 6 {
		return false, fmt.Errorf("bpf: %q is not an Ethernet MAC address", mac)
	}
	var want [6]uint8
	copy(want[:], mac)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, errClosed
	}
	m, key, err := r.mapKey(ip, ifindex)
	if err != nil {
		return false, err
	}

	for range 3 {
		var cur l2responderL2ResponderEntry
		err := m.Lookup(key, &cur)
		switch {
		case err == nil:
			if cur.Mac == want {
				return false, nil
			}
			cur.Mac = want
			err = m.Update(key, &cur, ebpf.UpdateExist)
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				continue // deleted meanwhile
			}
		case errors.Is(err, ebpf.ErrKeyNotExist):
			err = m.Update(key, &l2responderL2ResponderEntry{Mac: want}, ebpf.UpdateNoExist)
			if errors.Is(err, ebpf.ErrKeyExist) {
				continue // created meanwhile
			}
			created = err == nil
		}
		if err != nil {
			return false, fmt.Errorf("bpf: upserting %v on ifindex %d: %w", ip, ifindex, err)
		}
		return created, nil
	}
	return false, fmt.Errorf("bpf: upserting %v on ifindex %d: concurrent modification", ip, ifindex)
}

// Delete stops the responder answering for ip on ifindex. Deleting a missing
// entry is a no-op.
func (r *Responder) Delete(ip netip.Addr, ifindex int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	m, key, err := r.mapKey(ip, ifindex)
	if err != nil {
		return err
	}
	if err := m.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("bpf: deleting %v on ifindex %d: %w", ip, ifindex, err)
	}
	return nil
}

// Entries returns the entries of both maps, IPv4 first, sorted by IP and
// ifindex.
func (r *Responder) Entries() ([]Entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	return entriesOf(r.v4, r.v6)
}

// entriesOf reads an l2_responder_v4 and an l2_responder_v6 map, sorted by
// IP and ifindex.
func entriesOf(v4, v6 *ebpf.Map) ([]Entry, error) {
	var (
		key4  l2responderL2ResponderKey
		key6  l2responderL2ResponderKey6
		value l2responderL2ResponderEntry
		out   []Entry
	)
	add := func(ip netip.Addr, ifindex uint32) {
		out = append(out, Entry{
			IP:            ip,
			Ifindex:       int(ifindex),
			MAC:           slices.Clone(net.HardwareAddr(value.Mac[:])),
			ResponsesSent: value.ResponsesSent,
		})
	}
	it := v4.Iterate()
	for it.Next(&key4, &value) {
		var b [4]byte
		binary.NativeEndian.PutUint32(b[:], key4.Ip4)
		add(netip.AddrFrom4(b), key4.Ifindex)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("bpf: iterating %s: %w", MapResponderV4, err)
	}
	if v6 != nil {
		it = v6.Iterate()
		for it.Next(&key6, &value) {
			add(netip.AddrFrom16(key6.Ip6), key6.Ifindex)
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("bpf: iterating %s: %w", MapResponderV6, err)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := a.IP.Compare(b.IP); c != 0 {
			return c
		}
		return a.Ifindex - b.Ifindex
	})
	return out, nil
}

// Conflict is an entry of l2_responder_conflicts: another host spoke for IP
// on Ifindex (an ARP packet with IP as its sender address, a Neighbor
// Advertisement for it) while this node answered for it.
type Conflict struct {
	IP      netip.Addr
	Ifindex int
	MAC     net.HardwareAddr // the other host's, as last seen
	Seen    uint64           // packets
	// Ago is how long ago the last one was seen.
	Ago time.Duration
}

// Conflicts returns the entries of l2_responder_conflicts.
func (r *Responder) Conflicts() ([]Conflict, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	now, err := monotonicNow()
	if err != nil {
		return nil, err
	}
	return conflictsOf(r.conflicts, now)
}

// conflictsOf reads an l2_responder_conflicts map; now is CLOCK_MONOTONIC.
func conflictsOf(m *ebpf.Map, now uint64) ([]Conflict, error) {
	var (
		key   l2responderL2ResponderKey6
		value l2responderL2Conflict
		out   []Conflict
	)
	it := m.Iterate()
	for it.Next(&key, &value) {
		out = append(out, Conflict{
			IP:      netip.AddrFrom16(key.Ip6).Unmap(),
			Ifindex: int(key.Ifindex),
			MAC:     slices.Clone(net.HardwareAddr(value.Mac[:])),
			Seen:    value.Seen,
			Ago:     time.Duration(now - value.LastNs),
		})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("bpf: iterating %s: %w", MapConflicts, err)
	}
	return out, nil
}

// ForgetConflict removes the conflict entry of ip on ifindex: the next
// packet of another host for it creates a new one.
func (r *Responder) ForgetConflict(ip netip.Addr, ifindex int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	// As16 maps IPv4 to ::ffff:a.b.c.d, as the program keys it.
	key := l2responderL2ResponderKey6{Ip6: ip.As16(), Ifindex: uint32(ifindex)}
	if err := r.conflicts.Delete(&key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("bpf: forgetting the conflict for %v on ifindex %d: %w", ip, ifindex, err)
	}
	return nil
}

// Has reports whether the responder has an entry for ip on ifindex.
func (r *Responder) Has(ip netip.Addr, ifindex int) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, errClosed
	}
	m, key, err := r.mapKey(ip, ifindex)
	if err != nil {
		return false, err
	}
	var v l2responderL2ResponderEntry
	switch err := m.Lookup(key, &v); {
	case err == nil:
		return true, nil
	case errors.Is(err, ebpf.ErrKeyNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("bpf: looking up %v on ifindex %d: %w", ip, ifindex, err)
	}
}
