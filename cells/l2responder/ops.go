package l2responder

import (
	"context"
	"iter"
	"log/slog"
	"net"
	"net/netip"

	"github.com/cilium/statedb"

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
	// Advertisement (IPv6).
	announce func(ifindex int, ip netip.Addr, mac net.HardwareAddr) error
}

// Update programs one entry. An entry new to the map means this node just
// took the IP over: it announces itself (gratuitous ARP, unsolicited
// Neighbor Advertisement) so neighbours update their caches at once instead
// of when their entries expire.
func (o *mapOps) Update(_ context.Context, _ statedb.ReadTxn, _ statedb.Revision, e *tables.L2AnnounceEntry) error {
	mac := e.HardwareAddr()
	created, err := o.h.get().Upsert(e.IP, e.Ifindex, mac)
	if err != nil {
		return err
	}
	if created {
		if err := o.announce(e.Ifindex, e.IP, mac); err != nil {
			// The entry answers requests anyway; only the shortcut failed.
			o.log.Warn("Announcing the new owner to the LAN failed", "ip", e.IP, "interface", e.NetworkInterface, "error", err)
		} else {
			o.log.Info("Announcing", "ip", e.IP, "interface", e.NetworkInterface, "services", e.Origins)
		}
	}
	if e.IP.Is6() {
		// After the map entry: solicitations sent to the unicast address
		// are answered even if joining fails; the error keeps the entry
		// pending and retried, and says why multicast ones may not arrive.
		return o.ndp.Want(e.Ifindex, e.IP)
	}
	return nil
}

func (o *mapOps) Delete(_ context.Context, _ statedb.ReadTxn, _ statedb.Revision, e *tables.L2AnnounceEntry) error {
	o.log.Info("Withdrawing", "ip", e.IP, "interface", e.NetworkInterface)
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
	type key struct {
		ip      netip.Addr
		ifindex int
	}
	wanted := map[key]bool{}
	for e := range want {
		wanted[key{e.IP, e.Ifindex}] = true
	}
	entries, err := o.h.get().Entries()
	if err != nil {
		return err
	}
	for _, m := range entries {
		if !wanted[key{m.IP, m.Ifindex}] {
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
