package nodeipam

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Config      Config
	Agent       agentconfig.Config
	Log         *slog.Logger
	Lifecycle   cell.Lifecycle
	Jobs        job.Group
	DB          *statedb.DB
	Kube        kubernetes.Interface
	Herald      versioned.Interface
	Events      record.EventRecorder
	CiliumNodes statedb.Table[*tables.CiliumNode]
	Pods        statedb.Table[*tables.Pod]
	Namespaces  statedb.Table[*tables.Namespace]
	Pools       statedb.Table[*tables.PodIPPool]
	Nodes       statedb.Table[*tables.Node]
	CIDRs       statedb.RWTable[*tables.NodePodCIDR]
	Allocations statedb.RWTable[*tables.PodIPAllocation]
	Writes      statedb.RWTable[*nodeWrite]
	Reconcile   reconciler.Params
	Metrics     prometheus.Registerer `optional:"true"`
}

// agent ties the state to Kubernetes, the tables and the plugin.
type agent struct {
	params
	node string
	pre  map[string]int
	// defaultPool serves pods that name no pool (ipam-default-ip-pool).
	defaultPool string
	journal     *journal
	mu          sync.Mutex // guards state
	state       *state
	kick        chan struct{} // asks the sync job to look again now
	families    []tables.Family
	// gc is collectGarbage's own state.
	gc      gcTracker
	metrics *metrics
	// written is what the CiliumNode's writer tells the sync job.
	written ownWrite
	// forwarding: IP forwarding was turned on (with the first gateway on
	// a bridge: an agent whose node has no pods changes nothing on it).
	forwarding atomic.Bool
}

// Timings of the node's pod IPAM.
const (
	// addWait is how long an ADD waits for a CIDR when the node is full.
	addWait = 30 * time.Second
	// podWait is how long an ADD waits for its Pod to show up in the pods
	// table before asking the API server.
	podWait = 5 * time.Second
	// releaseSettle is how long a CIDR stays empty before it is released:
	// pods come and go in bursts.
	releaseSettle = 30 * time.Second
)

func register(p params) error {
	if !p.Agent.MultiPool() {
		return nil
	}
	pre, err := p.Config.preAllocation()
	if err != nil {
		return err
	}
	defaultPool, err := p.Config.defaultPool()
	if err != nil {
		return err
	}
	if p.Config.IPAMGCGrace <= 0 {
		return fmt.Errorf("ipam-gc-grace: %s is not a positive duration", p.Config.IPAMGCGrace)
	}
	a := &agent{params: p, node: p.Agent.Node(), pre: pre, defaultPool: defaultPool, kick: make(chan struct{}, 1), gc: gcTracker{grace: p.Config.IPAMGCGrace}}
	if p.Agent.EnableIPv4 {
		a.families = append(a.families, tables.IPv4)
	}
	if p.Agent.EnableIPv6 {
		a.families = append(a.families, tables.IPv6)
	}
	a.metrics = newMetrics(a)
	if p.Metrics != nil {
		p.Metrics.MustRegister(a.metrics)
	}
	if err := a.registerWriter(); err != nil {
		return err
	}
	srv := &server{agent: a}
	p.Lifecycle.Append(cell.Hook{
		OnStart: func(cell.HookContext) error {
			if err := a.restore(); err != nil {
				return err
			}
			return srv.start()
		},
		OnStop: func(ctx cell.HookContext) error { return srv.stop(ctx) },
	})
	p.Jobs.Add(
		job.OneShot("sync-ciliumnode", a.syncLoop),
		job.Timer("collect-garbage", a.collectGarbage, gcIntervalFor(p.Config.IPAMGCGrace)),
	)
	return nil
}

// restore reads the journal and replays the DELs the plugin queued while
// the agent was down, before the socket serves anything.
func (a *agent) restore() error {
	if err := os.MkdirAll(a.Config.IPAMStateDir, 0o700); err != nil {
		return err
	}
	j, err := openJournal(a.Config.IPAMStateDir)
	if err != nil {
		return err
	}
	a.journal = j
	entries, errs := j.load()
	for _, err := range errs {
		a.Log.Error("Journal entry unreadable; its address stays taken", "error", err)
	}
	// Under a.mu: the garbage collector tells a restored agent by state.
	a.mu.Lock()
	a.state = newState(j, a.families, a.pre, time.Now)
	a.state.restore(entries)
	a.mu.Unlock()
	a.Log.Info("Restored pod address allocations from the journal", "allocations", len(entries), "dir", j.dir)

	if err := a.replayPendingDels(); err != nil {
		return err
	}
	a.mu.Lock()
	a.publishAllLocked()
	a.mu.Unlock()
	return nil
}

// replayPendingDels applies the DELs the plugin queued while the agent did
// not answer (down, starting, frozen), then removes them. Run at start,
// before the socket serves, and with every garbage collection.
func (a *agent) replayPendingDels() error {
	reqs, files, errs := pendingDels(a.Config.IPAMStateDir)
	for _, err := range errs {
		a.Log.Error("Queued DEL unreadable", "error", err)
	}
	for i, r := range reqs {
		a.mu.Lock()
		// Still queued? An ADD of the same attachment since the file was
		// read supersedes it (the agent's add removes it, under a.mu).
		if _, err := os.Stat(files[i]); err != nil {
			a.mu.Unlock()
			continue
		}
		released, err := a.state.del(r.Attachment)
		if err == nil {
			_ = os.Remove(files[i])
		}
		a.publishLocked(nil, released)
		a.mu.Unlock()
		a.dropGateways()
		if err != nil {
			return err
		}
		a.Log.Info("Replayed a DEL queued while the agent did not answer", "container", r.ContainerID, "interface", r.IfName, "pod", r.Pod.Namespace+"/"+r.Pod.Name, "released", len(released))
	}
	if len(reqs) > 0 {
		a.poke()
	}
	return nil
}

// dropGateways removes the gateways of CIDRs that left the node.
func (a *agent) dropGateways() {
	a.mu.Lock()
	removed := a.state.takeRemoved()
	a.mu.Unlock()
	if len(removed) == 0 {
		return
	}
	if err := removeGateways(removed); err != nil {
		a.Log.Warn("Removing the gateways of released pod CIDRs failed", "cidrs", removed, "error", err)
	}
}

// The tables are written in the same critical section as the state they
// show (a.mu held): two requests that change the state one after the other
// must not reach the tables in the other order.

// publishAllLocked rewrites both tables from the state (start, CIDR
// changes). Called with a.mu held.
func (a *agent) publishAllLocked() {
	wtxn := a.DB.WriteTxn(a.CIDRs, a.Allocations)
	defer wtxn.Commit()
	_ = a.CIDRs.DeleteAll(wtxn)
	for p, c := range a.state.cidrs {
		_, _, _ = a.CIDRs.Insert(wtxn, cidrRow(p, c))
	}
	_ = a.Allocations.DeleteAll(wtxn)
	for _, e := range a.state.allocs {
		_, _, _ = a.Allocations.Insert(wtxn, allocationRow(e))
	}
	for _, e := range a.state.orphans {
		_, _, _ = a.Allocations.Insert(wtxn, allocationRow(e))
	}
}

// publishLocked updates the rows of the given allocations (added or
// released) and of their CIDRs. Called with a.mu held; the caller drops
// the gateways of CIDRs that left (dropGateways) once it released a.mu.
func (a *agent) publishLocked(added, released []entry) {
	if len(added) == 0 && len(released) == 0 {
		return
	}
	wtxn := a.DB.WriteTxn(a.CIDRs, a.Allocations)
	defer wtxn.Commit()
	touched := map[netip.Prefix]bool{}
	for _, e := range released {
		_, _, _ = a.Allocations.Delete(wtxn, allocationRow(e))
		touched[e.CIDR] = true
	}
	for _, e := range added {
		_, _, _ = a.Allocations.Insert(wtxn, allocationRow(e))
		touched[e.CIDR] = true
	}
	for p := range touched {
		if c := a.state.cidrs[p]; c != nil {
			_, _, _ = a.CIDRs.Insert(wtxn, cidrRow(p, c))
		} else {
			_, _, _ = a.CIDRs.Delete(wtxn, &tables.NodePodCIDR{CIDR: p})
		}
	}
}

func cidrRow(p netip.Prefix, c *nodeCIDR) *tables.NodePodCIDR {
	return &tables.NodePodCIDR{CIDR: p, Pool: c.pool, InUse: c.addrs.inUse(), Usable: c.addrs.usable(), Releasing: c.releasing, Gone: c.gone, Draining: c.draining}
}

func allocationRow(e entry) *tables.PodIPAllocation {
	return &tables.PodIPAllocation{
		IP: e.IP, CIDR: e.CIDR, Pool: e.Pool, Network: e.Network, ContainerID: e.ContainerID, IfName: e.IfName,
		PodNS: e.Pod.Namespace, PodName: e.Pod.Name, PodUID: e.Pod.UID, Since: e.Since,
	}
}

// poke wakes the sync job (the demand changed).
func (a *agent) poke() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// dropQueuedDel removes a DEL of the attachment that the plugin queued
// while the agent did not answer: an ADD of the same attachment came after
// it and supersedes it; replayed later it would release the ADD's
// addresses. Called with a.mu held, as replayPendingDels checks the file
// under a.mu.
func (a *agent) dropQueuedDel(att ipamv1.Attachment) error {
	path, err := ipamv1.PendingDelPath(a.Config.IPAMStateDir, att)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
