package responder

import (
	"context"
	"slices"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/tables"
)

// attachLoop keeps the program attached to exactly the selected devices.
// When a device (re)appears, the entries on it are announced again with a
// gratuitous ARP: neighbours may have dropped them while it was down.
func attachLoop(ctx context.Context, p params, h *handle, ops *mapOps, health cell.Health) error {
	for {
		devs, watch := p.Devices.AllWatch(p.DB.ReadTxn())
		want := map[int]bool{}
		for d := range devs {
			if d.Selected {
				want[d.Index] = true
			}
		}
		attached := h.get().Attached()
		for _, ifindex := range attached {
			if !want[ifindex] {
				if err := h.get().Detach(ifindex); err != nil {
					p.Log.Warn("Detach failed", "ifindex", ifindex, "error", err)
				}
			}
		}
		for ifindex := range want {
			if slices.Contains(attached, ifindex) {
				continue
			}
			if err := h.get().Attach(ifindex); err != nil {
				p.Log.Error("Cannot attach the ARP responder", "ifindex", ifindex, "error", err)
				health.Degraded("attach", err)
				continue
			}
			p.Log.Info("ARP responder attached", "ifindex", ifindex, "mode", p.Config.L2ResponderMode)
			var entries []*tables.L2AnnounceEntry
			for e := range p.Announce.All(p.DB.ReadTxn()) {
				// Only what is in the map: not what was handed over, nor
				// what waits for a conflict to clear.
				if e.Ifindex == ifindex && !e.Withdrawn && e.Status.Kind == reconciler.StatusKindDone {
					entries = append(entries, e)
				}
			}
			if len(entries) > 0 {
				ops.announceNew(ifindex, entries)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-watch:
		}
	}
}
