package responder

import (
	"context"
	"iter"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/cells/internal/neigh"
	"github.com/heraldlb/herald/tables"
)

// mapOps keeps the l2_responder_v4 and l2_responder_v6 maps equal to the
// l2-announce table, and this host in the solicited-node multicast groups
// of the IPv6 entries.
type mapOps struct {
	h   *handle
	log *slog.Logger
	ndp *neigh.NDP
	// announce sends a gratuitous ARP (IPv4) or an unsolicited Neighbor
	// Advertisement (IPv6) for each of the addresses.
	announce func(ifindex int, mac net.HardwareAddr, ips []netip.Addr) error
	// probe asks the LAN whether another host uses the addresses
	// (neigh.Probe); conflicts reports the ones that do.
	probe     func(ifindex int, self net.HardwareAddr, ips []netip.Addr, wait time.Duration) (map[netip.Addr]net.HardwareAddr, error)
	conflicts *conflicts
	// waiting are the entries whose probe another host answered, probed
	// again with every round of their interface.
	waiting *waitlist
}

// Update programs one entry (the reconciler's retries come here; new
// entries in bulk go through UpdateBatch).
func (o *mapOps) Update(ctx context.Context, txn statedb.ReadTxn, rev statedb.Revision, e *tables.L2AnnounceEntry) error {
	batch := []reconciler.BatchEntry[*tables.L2AnnounceEntry]{{Object: e, Revision: rev}}
	o.UpdateBatch(ctx, txn, batch)
	return batch[0].Result
}

// UpdateBatch programs entries. An address new to the map is probed first
// (all new ones of an interface in one round, with the ones waiting there):
// if another host answers for it, the entry is not programmed, the
// conflict is reported, and the entry's error makes the reconciler retry
// (probe again) later.
func (o *mapOps) UpdateBatch(_ context.Context, _ statedb.ReadTxn, batch []reconciler.BatchEntry[*tables.L2AnnounceEntry]) {
	fresh := map[port][]int{} // indexes into batch of the entries to probe
	for i := range batch {
		e := batch[i].Object
		if e.Withdrawn {
			// Handed over: out of the map; done means out.
			batch[i].Result = o.withdraw(e)
			continue
		}
		has, err := o.h.get().Has(e.IP, e.Ifindex)
		switch {
		case err != nil:
			batch[i].Result = err
		case !has:
			p := portOf(e)
			fresh[p] = append(fresh[p], i)
		default:
			o.waiting.remove(keyOf(e)) // programmed with another's round
		}
	}
	// The entries new to the map: this node just took their IPs over.
	created := map[port][]*tables.L2AnnounceEntry{}
	for p, idx := range fresh {
		for _, e := range o.probeRound(p, batch, idx) {
			created[p] = append(created[p], e)
		}
	}
	for i := range batch {
		e := batch[i].Object
		if batch[i].Result == nil && !e.Withdrawn {
			var isNew bool
			isNew, batch[i].Result = o.program(e)
			if isNew {
				created[portOf(e)] = append(created[portOf(e)], e)
			}
		}
	}
	for p, entries := range created {
		o.announceNew(p.ifindex, entries)
	}
}

// probeRound probes, on port p, the addresses of the batch's entries idx
// and those waiting there. A batch entry another host answers for gets
// the conflict as its result and waits; a waiting one found free is
// programmed at once and returned, to be announced.
func (o *mapOps) probeRound(p port, batch []reconciler.BatchEntry[*tables.L2AnnounceEntry], idx []int) (programmed []*tables.L2AnnounceEntry) {
	inBatch := make(map[entryKey]bool, len(idx))
	ips := make([]netip.Addr, 0, len(idx))
	wait := probeWait
	for _, i := range idx {
		k := keyOf(batch[i].Object)
		inBatch[k] = true
		ips = append(ips, batch[i].Object.IP)
		if o.waiting.has(k) {
			wait = probeWaitInUse
		}
	}
	waiting := o.waiting.on(p, inBatch)
	for _, e := range waiting {
		ips = append(ips, e.IP)
		wait = probeWaitInUse
	}
	found, err := o.probe(p.ifindex, batch[idx[0]].Object.HardwareAddr(), ips, wait)
	if err != nil {
		// Probing is a safety net: without it the addresses are still
		// this node's to announce.
		o.log.Warn("Cannot probe for address conflicts; announcing without", "ifindex", p.ifindex, "error", err)
	}
	for _, i := range idx {
		e := batch[i].Object
		if other, ok := found[e.IP]; ok {
			batch[i].Result = o.conflicts.found(e, other, whenProbing)
			o.waiting.add(e)
		} else {
			o.waiting.remove(keyOf(e))
		}
	}
	for _, e := range waiting {
		if _, ok := found[e.IP]; ok {
			continue
		}
		o.waiting.remove(keyOf(e))
		// The entry's own retry finds it in the map; if this fails, that
		// retry probes and programs it again.
		if isNew, err := o.program(e); err == nil && isNew {
			programmed = append(programmed, e)
		}
	}
	return programmed
}

// announceNew tells the LAN that the entries' IPs, new to the map, are at
// this node (gratuitous ARP, unsolicited Neighbor Advertisement), so that
// neighbours update their caches at once instead of when their entries
// expire; all of an interface's at once.
func (o *mapOps) announceNew(ifindex int, entries []*tables.L2AnnounceEntry) {
	ips := make([]netip.Addr, len(entries))
	for i, e := range entries {
		ips[i] = e.IP
	}
	if err := o.announce(ifindex, entries[0].HardwareAddr(), ips); err != nil {
		// The entries answer requests anyway; only the shortcut failed.
		o.log.Warn("Announcing the new owner to the LAN failed", "ips", ips, "interface", entries[0].NetworkInterface, "error", err)
		return
	}
	for _, e := range entries {
		o.log.Info("Announcing", "ip", e.IP, "interface", e.NetworkInterface, "services", e.Origins)
	}
}

// DeleteBatch withdraws entries.
func (o *mapOps) DeleteBatch(ctx context.Context, txn statedb.ReadTxn, batch []reconciler.BatchEntry[*tables.L2AnnounceEntry]) {
	for i := range batch {
		batch[i].Result = o.Delete(ctx, txn, batch[i].Revision, batch[i].Object)
	}
}

// program puts one entry into the map, and reports whether it is new
// there: this node just took the IP over, and announces it (announceNew).
func (o *mapOps) program(e *tables.L2AnnounceEntry) (created bool, err error) {
	created, err = o.h.get().Upsert(e.IP, e.Ifindex, e.HardwareAddr())
	if err != nil {
		return false, err
	}
	if e.IP.Is6() {
		// After the map entry: solicitations sent to the unicast address
		// are answered even if joining fails; the error keeps the entry
		// pending and retried, and says why multicast ones may not arrive.
		return created, o.ndp.Want(e.Ifindex, e.IP)
	}
	return created, nil
}

func (o *mapOps) Delete(_ context.Context, _ statedb.ReadTxn, _ statedb.Revision, e *tables.L2AnnounceEntry) error {
	return o.withdraw(e)
}

// withdraw takes one entry out of the map.
func (o *mapOps) withdraw(e *tables.L2AnnounceEntry) error {
	if has, err := o.h.get().Has(e.IP, e.Ifindex); err == nil && has {
		o.log.Info("Withdrawing", "ip", e.IP, "interface", e.NetworkInterface)
	}
	o.conflicts.forget(e)
	o.waiting.remove(keyOf(e))
	if err := o.h.get().Delete(e.IP, e.Ifindex); err != nil {
		return err
	}
	if e.IP.Is6() {
		return o.ndp.Unwant(e.Ifindex, e.IP)
	}
	return nil
}

// Prune removes map entries the table does not want.
func (o *mapOps) Prune(_ context.Context, _ statedb.ReadTxn, want iter.Seq2[*tables.L2AnnounceEntry, statedb.Revision]) error {
	wanted := map[entryKey]bool{}
	for e := range want {
		if !e.Withdrawn {
			wanted[keyOf(e)] = true
		}
	}
	o.waiting.retain(wanted)
	entries, err := o.h.get().Entries()
	if err != nil {
		return err
	}
	for _, m := range entries {
		if !wanted[entryKey{m.IP, m.Ifindex}] {
			o.log.Info("Removing stray responder entry", "ip", m.IP, "ifindex", m.Ifindex)
			if err := o.h.get().Delete(m.IP, m.Ifindex); err != nil {
				return err
			}
			if m.IP.Is6() {
				if err := o.ndp.Unwant(m.Ifindex, m.IP); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
