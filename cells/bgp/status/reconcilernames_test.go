package status

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/api/client/clientset/versioned/fake"
	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// namesSeen records the names the reconcilers report their rounds under.
type namesSeen struct {
	mu    sync.Mutex
	names map[string]bool
}

func (n *namesSeen) add(id cell.FullModuleID, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.names[id.String()+"/"+name] = true
}

func (n *namesSeen) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.names)
}

func (n *namesSeen) ReconciliationDuration(id cell.FullModuleID, name, _ string, _ time.Duration) {
	n.add(id, name)
}
func (n *namesSeen) ReconciliationErrors(id cell.FullModuleID, name string, _, _ int) {
	n.add(id, name)
}
func (n *namesSeen) PruneError(cell.FullModuleID, string, error)            {}
func (n *namesSeen) PruneDuration(cell.FullModuleID, string, time.Duration) {}

// noHealth discards the jobs' health reports.
type noHealth struct{}

func (noHealth) OK(string)                   {}
func (noHealth) Stopped(string)              {}
func (noHealth) Degraded(string, error)      {}
func (noHealth) NewScope(string) cell.Health { return noHealth{} }
func (noHealth) Close()                      {}

// TestReconcilersReportDistinctNames: the module's two reconcilers (the
// resources' conditions, the node config) report under names of their own.
// Under one name, herald_reconcile_errors_current would show whichever set
// it last, hiding the other's failing objects.
func TestReconcilersReportDistinctNames(t *testing.T) {
	seen := &namesSeen{names: map[string]bool{}}
	var db *statedb.DB
	var res statedb.RWTable[*tables.BGPResourceStatus]
	var nodes statedb.RWTable[*tables.BGPNodeStatus]
	h := hive.NewWithOptions(hive.Options{
		ModulePrivateProviders: cell.ModulePrivateProviders{
			func(r job.Registry) job.Group { return r.NewGroup(noHealth{}) },
		},
	},
		job.Cell, statedb.Cell,
		cell.Module("bgp-status", "test",
			cell.Provide(
				tables.NewBGPResourceStatusTable, tables.NewBGPNodeStatusTable,
				func() reconciler.Metrics { return seen },
				func() agentconfig.Config { return agentconfig.Config{NodeName: "node1"} },
				func() bgpconfig.Config { return bgpconfig.Config{EnableBGPControlPlane: true} },
				func() versioned.Interface { return fake.NewSimpleClientset() },
			),
			cell.Invoke(registerReconcilers),
			cell.Invoke(func(d *statedb.DB, r statedb.RWTable[*tables.BGPResourceStatus], n statedb.RWTable[*tables.BGPNodeStatus]) {
				db, res, nodes = d, r, n
			}),
		),
	)
	log := slog.New(slog.DiscardHandler)
	if err := h.Start(log, context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Stop(log, context.Background()) }()
	wtxn := db.WriteTxn(res, nodes)
	_, _, _ = res.Insert(wtxn, &tables.BGPResourceStatus{Kind: "CiliumBGPPeerConfig", Name: "peer", Status: reconciler.StatusPending()})
	_, _, _ = nodes.Insert(wtxn, &tables.BGPNodeStatus{Node: "node1", Status: reconciler.StatusPending()})
	wtxn.Commit()

	deadline := time.Now().Add(10 * time.Second)
	for seen.count() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := seen.count(); n != 2 {
		seen.mu.Lock()
		t.Fatalf("the two reconcilers reported under %d name(s), want 2: %v", n, seen.names)
	}
}
