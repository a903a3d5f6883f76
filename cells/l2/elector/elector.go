package elector

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// params are what the elector reads and writes.
type params struct {
	cell.In

	Agent        agentconfig.Config
	L2           l2config.Config
	Leases       l2config.L2Leases
	Log          *slog.Logger
	DB           *statedb.DB
	Jobs         job.Group
	Kube         kubernetes.Interface
	REST         *rest.Config `optional:"true"`
	Candidates   statedb.Table[*tables.L2Candidate]
	Members      statedb.Table[*tables.L2Member]
	Confirmation statedb.Table[*tables.L2MemberConfirmation]
	Records      statedb.Table[*tables.L2Lease]
	Leadership   statedb.Table[*tables.Leadership]
	Announce     statedb.RWTable[*tables.L2AnnounceEntry]
	Health       statedb.RWTable[*tables.L2LeaseHealth]
	Owners       statedb.RWTable[*tables.L2Owner]
	Meta         statedb.RWTable[*tables.L2MemberMeta]
	Events       record.EventRecorder
	Metrics      prometheus.Registerer `optional:"true"`
}

// tookMany stands for every unrecorded takeover of a member whose list
// did not fit into its metadata.
const tookMany = tables.L2TookMany

func registerMembersElector(p params) error {
	if !p.L2.Runs(l2config.ElectionMembers) {
		return nil
	}
	// The timings of the node Leases.
	if err := p.Leases.Validate(); err != nil {
		return err
	}
	records, err := recordClient(p)
	if err != nil {
		return err
	}
	e := &elector{params: p, self: p.Agent.Node(), timings: p.Leases.Timings(),
		fence:  fence{newTerm: newTermName},
		leases: p.Kube.CoordinationV1().Leases(p.Agent.K8sNamespace), recordLeases: records,
		seen: map[string]seenLease{}, terms: termsSeen{}, records: map[string]seenRecord{}, took: map[string]string{}, inflight: map[string]bool{},
		overlay: map[string]overlay{}, announced: map[string]bool{},
		results: make(chan writeResult, 64),
		writing: make(chan struct{}, maxWritesInFlight),
		metrics: newElectorMetrics(p.Agent.Node()),
	}
	if p.Metrics != nil {
		p.Metrics.MustRegister(e.metrics)
	}
	p.Jobs.Add(job.OneShot("elect", e.run))
	p.Jobs.Add(job.OneShot("witness", func(ctx context.Context, _ cell.Health) error {
		// Only once the member protocol runs, as the election itself.
		if err := tables.WaitInitialized(ctx, e.DB, e.Candidates, e.Records, e.Members); err == nil {
			e.renewWitness(ctx)
		}
		return nil
	}))
	return nil
}

// elector runs the ownership protocol (decide) on what the failure
// detector (l2-members, l2-member-confirmation), the Leases and the
// candidates say, and keeps its outcome in the tables the responder
// reads. It alone owns the timing contract: the
// fence (until when this node may answer) is published in l2-lease-health,
// and the responder's eBPF program stops answering at that deadline by
// itself, even if this agent is frozen.
type elector struct {
	params
	self    string
	timings tables.LeaseTimings
	// fenceMu guards fence, settling and silenced: the loop moves the
	// fence while a round runs (loop.go), and the round publishes it with
	// its entries. The term and its start change only between rounds.
	fenceMu sync.Mutex
	fence   fence
	leases  coordinationclient.LeaseInterface
	// recordLeases writes the takeover records, with a rate limit of its
	// own (recordClient).
	recordLeases coordinationclient.LeaseInterface

	// seen: when each Lease version was first seen, for the node Leases'
	// expiry (judged on this node's clock).
	seen map[string]seenLease
	// witness: this node's witness record; witnesses: the peers' as seen
	// (witness.go).
	witness   ownWitness
	witnesses map[string]seenWitness
	// terms: the terms this node saw its members in (terms.go).
	terms termsSeen
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
	// settling: a new term began and entries of the old one may still be
	// in the responder. The responder pushes its deadline forward as soon
	// as one is published, apart from taking entries out; until they are
	// out, no deadline is published, or the old term's groups, which
	// others may have taken over since, would be answered again.
	settling bool
	// silenced: a takeover record named the term while a round ran; the
	// node does not answer until it left the term, after the round.
	silenced bool
	results  chan writeResult
	writing  chan struct{} // one token per write in flight
	metrics  *electorMetrics
}

type seenLease struct {
	version string
	at      time.Time
}

// recordClientQPS is the rate limit of the takeover records' own client:
// a few writes per failed node, which must not queue behind the Lease
// writes and Events of the groups they move.
const recordClientQPS = 20

// recordClient is the Lease client of the takeover records: the agent's
// connection settings with a rate limit of its own.
func recordClient(p params) (coordinationclient.LeaseInterface, error) {
	if p.REST == nil {
		return p.Kube.CoordinationV1().Leases(p.Agent.K8sNamespace), nil
	}
	cfg := rest.CopyConfig(p.REST)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = recordClientQPS, 2*recordClientQPS, nil
	c, err := coordinationclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return c.Leases(p.Agent.K8sNamespace), nil
}

func newTermName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// evidence is this node's standing (judge) from what it knows at now: the
// live members, the cluster's size (the universe: the live members and
// the nodes whose Lease is not known to have expired), and until when
// the peers confirm it.
func (e *elector) evidence(now time.Time, txn statedb.ReadTxn, rows []*tables.L2Member, confirmed confirmation) standing {
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
	liveNodes := map[string]bool{}
	for _, m := range rows {
		if m.Live() {
			universe[m.Node] = true
			liveNodes[m.Node] = true
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
	// The witness records: renewed while this node knows of at most one
	// other node, the tie-breaker between two.
	e.observeWitnesses(now, statedb.Collect(e.Records.Prefix(txn, tables.L2LeaseNameIndex.Query(tables.L2WitnessLeasePrefix))))
	e.witness.want(len(universe) <= 2)
	w := witness{own: e.witness.deadline(), peersGone: true}
	for node := range universe {
		if node != e.self && !liveNodes[node] && !e.witnessGone(node, now, watchLive) {
			w.peersGone = false
		}
	}
	return judge(live, len(universe), confirmed, own, w)
}
