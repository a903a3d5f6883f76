package elector

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/internal/tablesync"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// params are what the cell's two elections read and write (the Lease
// election uses part of them).
type params struct {
	cell.In

	Agent      agentconfig.Config
	L2         l2config.Config
	Leases     l2config.L2Leases
	Config     Config
	Log        *slog.Logger
	DB         *statedb.DB
	Jobs       job.Group
	Kube       kubernetes.Interface
	Candidates statedb.Table[*tables.L2Candidate]
	Nodes      statedb.Table[*tables.Node]
	Devices    statedb.Table[*tables.Device]
	Records    statedb.Table[*tables.L2Lease]
	Leadership statedb.Table[*tables.Leadership]
	Announce   statedb.RWTable[*tables.L2AnnounceEntry]
	Health     statedb.RWTable[*tables.L2LeaseHealth]
	Members    statedb.RWTable[*tables.L2Member]
	Owners     statedb.RWTable[*tables.L2Owner]
	Events     record.EventRecorder
	Metrics    prometheus.Registerer `optional:"true"`
}

func registerMembersElector(p params) error {
	if !p.L2.Runs(l2config.ElectionMembers) {
		return nil
	}
	// The timings of the node Leases.
	if err := p.Leases.Validate(); err != nil {
		return err
	}
	e := &elector{params: p, self: p.Agent.Node(), timings: p.Leases.Timings(),
		members: newMembers(p.Log, p.Agent.Node()),
		fence:   fence{newTerm: newTermName},
		leases:  p.Kube.CoordinationV1().Leases(p.Agent.K8sNamespace),
		seen:    map[string]seenLease{}, records: map[string]seenRecord{}, took: map[string]string{}, inflight: map[string]bool{},
		overlay: map[string]overlay{}, announced: map[string]bool{},
		results: make(chan writeResult, 64),
		writing: make(chan struct{}, maxWritesInFlight),
		metrics: newElectorMetrics(p.Agent.Node()),
	}
	if p.Metrics != nil {
		p.Metrics.MustRegister(e.metrics)
	}
	p.Jobs.Add(job.OneShot("elect", e.run))
	return nil
}

// elector runs the ownership protocol (decide) on what the failure
// detector, the Leases and the candidates say, and keeps its outcome in
// the tables the responder reads. It alone owns the timing contract: the
// fence (until when this node may answer) is published in l2-lease-health,
// and the responder's eBPF program stops answering at that deadline by
// itself, even if this agent is frozen.
type elector struct {
	params
	self    string
	timings tables.LeaseTimings
	members *members
	fence   fence
	leases  coordinationclient.LeaseInterface

	// seen: when each Lease version was first seen, for the node Leases'
	// expiry (judged on this node's clock).
	seen map[string]seenLease
	// records: the announcement Leases as last seen, and when each was
	// last renewed (a new version with the same holder).
	records map[string]seenRecord
	// took: groups taken over while the API server was unreachable.
	took map[string]string
	// inflight: groups with a Lease write or delete under way; overlay:
	// the outcome of a write until the table shows it.
	inflight  map[string]bool
	overlay   map[string]overlay
	announced map[string]bool // for the L2Announced Event
	lastFail  time.Time       // last Lease write that failed for another reason than a conflict
	results   chan writeResult
	writing   chan struct{} // one token per write in flight
	metrics   *electorMetrics
}

type seenLease struct {
	version string
	at      time.Time
}

func newTermName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (e *elector) run(ctx context.Context, health cell.Health) error {
	advertise, err := e.waitReady(ctx, health)
	if err != nil {
		return nil
	}
	var secret []byte
	for {
		if secret, err = e.Config.peerSecret(ctx, e.Kube, e.Agent.K8sNamespace); err == nil {
			break
		}
		e.Log.Error("No peer secret: this node takes no part in L2 announcements until it has one", "error", err)
		health.Degraded("peer secret", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
	if err := e.members.start(advertise, e.Config.L2AnnouncementsPeerPort, secret); err != nil {
		health.Degraded("member protocol", err)
		return err
	}
	e.Log.Info("Member protocol started", "address", advertise, "port", e.Config.L2AnnouncementsPeerPort)
	defer e.shutdown()

	go e.echoLoop(ctx)
	go e.joinLoop(ctx)

	tick := time.NewTicker(echoInterval)
	defer tick.Stop()
	var (
		lastFresh    bool
		lastTerm     string
		lastMembers  uint64
		lastMayMove  bool
		lastGrace    bool
		inputs       []<-chan struct{}
		writesLanded bool
	)
	for {
		now := time.Now()
		rows, version := e.members.snapshot()
		e.writeMembers(rows)
		st := e.evidence(now, rows)
		why := st.why
		if e.fence.advance(now, st.until, st.hold) {
			e.Log.Info("Liveness confirmed: new term; holdings of earlier terms are void", "term", e.fence.term, "evidence", why)
			e.metrics.terms.Inc()
			e.took = map[string]string{}
		}
		fresh := e.fence.valid(now)
		if fresh != lastFresh {
			if fresh {
				health.OK("liveness confirmed: " + why)
			} else {
				e.Log.Warn("Liveness not confirmed: not answering", "term", e.fence.term, "why", why)
				health.Degraded("not answering", errors.New(why))
			}
		}
		writesLanded = e.drainResults() || writesLanded
		grace := inRejoinGrace(rows, e.fence.since, now)
		// Decide again when an input changed; echoes only move the fence.
		if inputs == nil || tablesync.Closed(inputs...) || fresh != lastFresh || e.fence.term != lastTerm || version != lastMembers || writesLanded ||
			st.mayMove != lastMayMove || grace != lastGrace {
			inputs = e.round(fresh, st.mayMove, rows)
			writesLanded = false
		}
		e.publishFence(fresh)
		lastFresh, lastTerm, lastMembers, lastMayMove, lastGrace = fresh, e.fence.term, version, st.mayMove, grace

		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-e.members.changed:
		case r := <-e.results:
			e.handleResult(r)
			writesLanded = true
		}
	}
}

// evidence is this node's standing (judge) from what it knows at now: the
// live members, and the cluster's size (the universe: the live members
// and the nodes whose Lease is not known to have expired).
func (e *elector) evidence(now time.Time, rows []*tables.L2Member) standing {
	txn := e.DB.ReadTxn()
	// When each node Lease version was first seen; Leases gone are
	// forgotten.
	seen := map[string]seenLease{}
	watchLive := false
	for l := range e.Records.Prefix(txn, tables.L2LeaseNameIndex.Query(tables.L2NodeLeasePrefix)) {
		s, ok := e.seen[l.Name]
		if !ok || s.version != l.ResourceVersion {
			s = seenLease{l.ResourceVersion, now}
		}
		seen[l.Name] = s
		// Every live node renews its Lease once per retry period: seeing
		// one change proves that the watch delivers.
		watchLive = watchLive || now.Sub(s.at) < 2*e.timings.RetryPeriod+time.Second
	}
	e.seen = seen
	universe := map[string]bool{e.self: true}
	for name, s := range seen {
		node, _ := strings.CutPrefix(name, tables.L2NodeLeasePrefix)
		// Without a live watch nothing expires: the node may be renewing
		// a Lease this agent cannot see.
		if !watchLive || now.Sub(s.at) <= e.timings.Duration {
			universe[node] = true
		}
	}
	live := 0
	for _, m := range rows {
		if m.Live() {
			universe[m.Node] = true
			live++
		}
	}
	if live == 0 {
		live = 1 // this node, before the member protocol reports itself
	}
	own := time.Time{}
	if l, _, ok := e.Leadership.Get(txn, tables.LeadershipLeaseIndex.Query(tables.L2NodeLeasePrefix+e.self)); ok && l.Leading {
		own = l.ValidUntil
	}
	return judge(live, len(universe), e.members.confirmedUntil(), own)
}
