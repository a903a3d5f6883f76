package elector

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// The background loops of the member protocol: echoes that confirm this
// node in the others' view, joins of the nodes not yet in, and the wait
// for this node's address.

func (e *elector) echoLoop(ctx context.Context) {
	tick := time.NewTicker(echoInterval)
	defer tick.Stop()
	for turn := 0; ; turn++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			e.members.echo(turn)
		}
	}
}

// joinLoop asks the nodes that are not in the member cluster to let this
// node in, once per joinInterval: new nodes, and after a partition heals.
func (e *elector) joinLoop(ctx context.Context) {
	tick := time.NewTicker(joinInterval)
	defer tick.Stop()
	for {
		live := map[string]bool{}
		rows, _ := e.members.snapshot()
		for _, m := range rows {
			if m.Live() {
				live[m.Node] = true
			}
		}
		e.members.join(peerAddrs(statedb.Collect(e.Nodes.All(e.DB.ReadTxn())), live, e.self, e.Config.L2AnnouncementsPeerPort))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// waitReady waits for the tables the elector reads and for this node's
// address (its Node's first InternalIP), which the peers reach it at.
func (e *elector) waitReady(ctx context.Context, health cell.Health) (addr netip.Addr, err error) {
	if err := tables.WaitInitialized(ctx, e.DB, e.Candidates, e.Records, e.Nodes, e.Devices); err != nil {
		return addr, err
	}
	for {
		n, _, nodeWatch, ok := e.Nodes.GetWatch(e.DB.ReadTxn(), tables.NodeNameIndex.Query(e.self))
		if ok && len(n.InternalIPs) > 0 {
			return n.InternalIPs[0], nil
		}
		health.Degraded("waiting for an InternalIP", fmt.Errorf("Node %s has no InternalIP address: the peers reach this agent at it", e.self))
		select {
		case <-ctx.Done():
			return addr, ctx.Err()
		case <-nodeWatch:
		}
	}
}
