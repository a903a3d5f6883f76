package members

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// The background loops of the member protocol: echoes that confirm this
// node in the others' view, joins of the nodes not yet in, and the wait
// for this node's address.

func (r *runner) echoLoop(ctx context.Context) {
	tick := time.NewTicker(echoInterval)
	defer tick.Stop()
	for turn := 0; ; turn++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			r.m.echo(turn)
		}
	}
}

// joinLoop asks the nodes that are not in the member cluster to let this
// node in, once per joinInterval: new nodes, and after a partition heals.
func (r *runner) joinLoop(ctx context.Context) {
	tick := time.NewTicker(joinInterval)
	defer tick.Stop()
	for {
		live := map[string]bool{}
		rows, _ := r.m.snapshot()
		for _, m := range rows {
			if m.Live() {
				live[m.Node] = true
			}
		}
		r.m.join(peerAddrs(statedb.Collect(r.Nodes.All(r.DB.ReadTxn())), live, r.self, r.Config.L2AnnouncementsPeerPort))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// waitAddress waits for the tables this cell reads and for this node's
// address (its Node's first InternalIP), which the peers reach it at.
func (r *runner) waitAddress(ctx context.Context, health cell.Health) (addr netip.Addr, err error) {
	if err := tables.WaitInitialized(ctx, r.DB, r.Nodes, r.Devices); err != nil {
		return addr, err
	}
	for {
		n, _, nodeWatch, ok := r.Nodes.GetWatch(r.DB.ReadTxn(), tables.NodeNameIndex.Query(r.self))
		if ok && len(n.InternalIPs) > 0 {
			return n.InternalIPs[0], nil
		}
		health.Degraded("waiting for an InternalIP", fmt.Errorf("Node %s has no InternalIP address: the peers reach this agent at it", r.self))
		select {
		case <-ctx.Done():
			return addr, ctx.Err()
		case <-nodeWatch:
		}
	}
}

// peerAddrs are the member addresses of the nodes not in the cluster.
func peerAddrs(nodes []*tables.Node, live map[string]bool, self string, port int) []string {
	var out []string
	for _, n := range nodes {
		if n.Name == self || live[n.Name] || len(n.InternalIPs) == 0 {
			continue
		}
		out = append(out, net.JoinHostPort(n.InternalIPs[0].String(), fmt.Sprint(port)))
	}
	return out
}
