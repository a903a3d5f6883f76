package responder

import (
	"net/netip"

	"github.com/heraldlb/herald/tables"
)

// waitlist holds the entries that are not in the map because another host
// answered their probe. The reconciler retries each one on its own backoff,
// and a probe round listens for probeWait: retried one at a time, a
// hundred addresses freed at once (another load balancer handing over)
// would take a hundred rounds. So every probe round of an interface asks
// for the waiting addresses of that interface too, and programs those
// found free; their own retries then find them in the map.
//
// Only the reconciler's goroutine uses it (mapOps' operations).
type waitlist struct {
	m map[entryKey]*tables.L2AnnounceEntry
}

// entryKey is what identifies an entry in the map: its address and
// interface.
type entryKey struct {
	ip      netip.Addr
	ifindex int
}

// port is an interface and the MAC the node answers with there: one
// probe round each.
type port struct {
	ifindex int
	mac     string
}

func keyOf(e *tables.L2AnnounceEntry) entryKey { return entryKey{e.IP, e.Ifindex} }
func portOf(e *tables.L2AnnounceEntry) port    { return port{e.Ifindex, e.MAC} }

func newWaitlist() *waitlist { return &waitlist{m: map[entryKey]*tables.L2AnnounceEntry{}} }

// add records e as waiting for its address to be free (the newest version
// of an entry replaces the one before).
func (w *waitlist) add(e *tables.L2AnnounceEntry) { w.m[keyOf(e)] = e }

// has reports whether the entry of k waits.
func (w *waitlist) has(k entryKey) bool {
	_, ok := w.m[k]
	return ok
}

// remove forgets the entry of k: programmed, withdrawn or deleted.
func (w *waitlist) remove(k entryKey) { delete(w.m, k) }

// on returns the waiting entries of port p, but for those in skip (the
// batch being probed anyway).
func (w *waitlist) on(p port, skip map[entryKey]bool) []*tables.L2AnnounceEntry {
	var out []*tables.L2AnnounceEntry
	for k, e := range w.m {
		if portOf(e) == p && !skip[k] {
			out = append(out, e)
		}
	}
	return out
}

// retain forgets the entries the table no longer wants (Prune).
func (w *waitlist) retain(wanted map[entryKey]bool) {
	for k := range w.m {
		if !wanted[k] {
			delete(w.m, k)
		}
	}
}
