package podannounce

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"github.com/heraldlb/herald/tables"
)

// tracker decides which pod addresses to announce, from the changes of the
// pod-ip-allocations table as they come (no I/O). Announced once each:
//
//   - a new IPv4 allocation (an address given to a container's interface
//     after this agent started) is announced;
//   - IPv6 allocations never are: the spec sends ARP only, no unsolicited
//     Neighbor Advertisements;
//   - allocations made before this agent started (restored from the
//     journal after a restart) are not: their address did not move, as
//     Cilium does not announce the endpoints it restores;
//   - the same allocation written again (the node IPAM rewrites its rows
//     when the node's CIDRs change) is not announced again;
//   - an address released and given again, or given to another container,
//     is a new allocation.
//
// An announcement stays pending until sent is called for it or its
// allocation goes away.
type tracker struct {
	// start is when this agent started: allocations older than that are
	// restored ones.
	start  time.Time
	allocs map[netip.Addr]*tracked
	// seq numbers allocations in the order they were seen, so that
	// pending announcements go out first come, first served.
	seq uint64
}

type tracked struct {
	row     *tables.PodIPAllocation
	seq     uint64
	pending bool
}

func newTracker(start time.Time) *tracker {
	return &tracker{start: start, allocs: map[netip.Addr]*tracked{}}
}

// sameAllocation reports whether two rows are one allocation: the same
// attachment (network, container, interface) since the same moment. A
// released address handed out again has a new Since, even to the same
// container.
func sameAllocation(a, b *tables.PodIPAllocation) bool {
	return a.IP == b.IP && a.Network == b.Network && a.ContainerID == b.ContainerID &&
		a.IfName == b.IfName && a.Since.Equal(b.Since)
}

// observe takes one change of the table.
func (t *tracker) observe(row *tables.PodIPAllocation, deleted bool) {
	if !row.IP.Is4() {
		return
	}
	cur := t.allocs[row.IP]
	if deleted {
		// Only the allocation that is gone: a deletion seen after the
		// address went to someone else must not forget the new one.
		if cur != nil && sameAllocation(cur.row, row) {
			delete(t.allocs, row.IP)
		}
		return
	}
	if cur != nil && sameAllocation(cur.row, row) {
		cur.row = row // rewritten, not new: keep its state
		return
	}
	t.seq++
	t.allocs[row.IP] = &tracked{row: row, seq: t.seq, pending: !row.Since.Before(t.start)}
}

// pending returns the allocations to announce, oldest first.
func (t *tracker) pending() []*tables.PodIPAllocation {
	var ps []*tracked
	for _, a := range t.allocs {
		if a.pending {
			ps = append(ps, a)
		}
	}
	slices.SortFunc(ps, func(a, b *tracked) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]*tables.PodIPAllocation, len(ps))
	for i, a := range ps {
		out[i] = a.row
	}
	return out
}

// sent marks the allocation of row announced. A row that is no longer the
// current allocation of its address (it changed while the packet went out)
// leaves the new one pending.
func (t *tracker) sent(row *tables.PodIPAllocation) {
	if cur := t.allocs[row.IP]; cur != nil && sameAllocation(cur.row, row) {
		cur.pending = false
	}
}
