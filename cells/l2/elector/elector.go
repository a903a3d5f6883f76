package elector

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// params are what the cell's two elections read and write (the Lease
// election uses part of them).
type params struct {
	cell.In

	Agent      agentconfig.Config
	L2         l2config.Config
	Leases     L2Leases
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
	if !p.Config.runs(p.L2, L2ElectionMembers) {
		return nil
	}
	// The timings of the node Leases.
	if err := validateLeases(p.Leases); err != nil {
		return err
	}
	e := &elector{params: p, self: p.Agent.Node(), timings: electionTimings(p.Leases),
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

// maxWritesInFlight bounds the concurrent Lease writes: a thousand groups
// changing hands at once queue here rather than time out in the client's
// rate limiter (a timeout would count as the API server being down).
const maxWritesInFlight = 8

type seenLease struct {
	version string
	at      time.Time
}

type seenRecord struct {
	version, holder, term string
	renewedAt             time.Time
	since                 time.Time // first seen by this agent
}

// observeRecord notes a version of an announcement Lease, seen at now, and
// reports whether an agent of the Lease election may hold it: it was
// renewed within its duration (d at least), i.e. written again with the
// same holder and term, which this election never does (it writes a Lease
// when the group changes hands, or terms); or this agent has not watched
// it for that long yet and its holder is no member it knows. The second
// result is when that stops being true.
func (e *elector) observeRecord(l *tables.L2Lease, now time.Time, d time.Duration, member bool) (bool, time.Time) {
	s, ok := e.records[l.Name]
	if !ok || s.version != l.ResourceVersion {
		next := seenRecord{version: l.ResourceVersion, holder: l.Holder, term: l.Term, since: now}
		if ok {
			next.since = s.since
			if l.Holder != "" && s.holder == l.Holder && s.term == l.Term {
				next.renewedAt = now
			}
		}
		s = next
		e.records[l.Name] = s
	}
	d = max(d, time.Duration(l.DurationSeconds)*time.Second)
	var until time.Time
	if !s.renewedAt.IsZero() {
		until = s.renewedAt.Add(d)
	}
	if l.Holder != "" && !member && s.since.Add(d).After(until) {
		until = s.since.Add(d)
	}
	if !until.After(now) {
		return false, time.Time{}
	}
	return true, until
}

type overlay struct {
	fromVersion string
	h           holding
}

type writeResult struct {
	w       write
	deleted bool
	version string
	err     error
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
		if inputs == nil || closed(inputs...) || fresh != lastFresh || e.fence.term != lastTerm || version != lastMembers || writesLanded ||
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

// round decides and applies the outcome. It returns a channel that closes
// when an input of the decision changes.
func (e *elector) round(fresh, mayMove bool, rows []*tables.L2Member) []<-chan struct{} {
	txn := e.DB.ReadTxn()
	cands, candWatch := e.Candidates.AllWatch(txn)
	recs, recWatch := e.Records.PrefixWatch(txn, tables.L2LeaseNameIndex.Query(tables.L2AnnounceLeasePrefix))
	ann, annWatch := e.Announce.AllWatch(txn)
	_, devWatch := e.Devices.AllWatch(txn)
	inputs := []<-chan struct{}{candWatch, recWatch, annWatch, devWatch}

	v := view{self: e.self, term: e.fence.term, fresh: fresh, mayMove: mayMove, apiUp: e.apiUp(time.Now()),
		members: map[string]member{}, groups: statedb.Collect(cands), records: map[string]holding{},
		took: e.took, withdrawn: map[string]bool{}, renewed: map[string]bool{}}
	now := time.Now()
	for _, m := range rows {
		// A death seen before this node's term began counts only after
		// the rejoin grace: until then the member is treated as alive.
		live := m.Live() || !deathTrusted(m, e.fence.since, now)
		v.members[m.Node] = member{live: live, term: m.Term, tookOver: m.TookOver}
	}
	var renewedUntil time.Time
	present := map[string]bool{}
	for l := range recs {
		present[l.Name] = true
		_, member := v.members[l.Holder]
		renewed, until := e.observeRecord(l, now, e.timings.Duration, member)
		if renewed && (renewedUntil.IsZero() || until.Before(renewedUntil)) {
			renewedUntil = until
		}
		v.records[l.Name] = holding{holder: l.Holder, term: l.Term, version: l.ResourceVersion}
		if renewed {
			v.renewed[l.Name] = true
		}
	}
	for name := range e.records {
		if !present[name] {
			delete(e.records, name)
		}
	}
	// Decide again when a renewed Lease has not been renewed for its
	// duration: it may be taken then.
	if !renewedUntil.IsZero() {
		expired := make(chan struct{})
		time.AfterFunc(time.Until(renewedUntil), func() { close(expired) })
		inputs = append(inputs, expired)
	}
	for g, o := range e.overlay {
		if cur, ok := v.records[g]; (ok && cur.version == o.fromVersion) || (!ok && o.fromVersion == "") {
			v.records[g] = o.h
		} else {
			delete(e.overlay, g)
		}
	}
	// A group's entries are out once every one of them is marked withdrawn
	// and the responder reports it done.
	groupOf := map[tables.L2AnnounceKey]string{}
	for _, c := range v.groups {
		for _, l := range c.Local {
			groupOf[tables.L2AnnounceKey{IP: l.IP, NetworkInterface: l.NetworkInterface}] = c.Group
		}
	}
	pending := map[string]bool{}
	for a := range ann {
		if !a.Withdrawn || a.Status.Kind != reconciler.StatusKindDone {
			pending[groupOf[tables.L2AnnounceKey{IP: a.IP, NetworkInterface: a.NetworkInterface}]] = true
		}
	}
	for _, c := range v.groups {
		if !pending[c.Group] {
			v.withdrawn[c.Group] = true
		}
	}

	p := decide(v)
	e.took = p.took
	e.apply(v, p, fresh)
	e.collect(v)
	for _, w := range p.writes {
		e.send(w, false)
	}
	return inputs
}

// apply makes l2-announce, l2-owners and the metadata match the plan.
func (e *elector) apply(v view, p plan, fresh bool) {
	want := map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{}
	owners := make([]*tables.L2Owner, 0, len(v.groups))
	held := 0
	for _, c := range v.groups {
		d := p.decisions[c.Group]
		rec := v.records[c.Group]
		o := &tables.L2Owner{Group: c.Group, IPs: c.IPs, Owner: d.owner, Announced: d.announce, Why: d.why}
		if rec.holder != "" {
			o.Holder = rec.key()
		}
		owners = append(owners, o)
		if d.announce || d.withdraw {
			for _, l := range c.Local {
				en := l.Clone()
				en.Withdrawn = d.withdraw
				want[tables.L2AnnounceKey{IP: en.IP, NetworkInterface: en.NetworkInterface}] = en
			}
		}
		if d.announce {
			held++
			if !e.announced[c.Group] {
				recordAnnounced(e.Events, e.self, c.Group, c.Local)
			}
		}
		e.announced[c.Group] = d.announce
	}
	for g := range e.announced {
		if _, ok := p.decisions[g]; !ok {
			delete(e.announced, g)
		}
	}
	e.metrics.held.Set(float64(held))

	wtxn := e.DB.WriteTxn(e.Announce, e.Owners, e.Health)
	for en := range e.Announce.All(wtxn) {
		k := tables.L2AnnounceKey{IP: en.IP, NetworkInterface: en.NetworkInterface}
		if w, ok := want[k]; ok && en.Ifindex == w.Ifindex && en.MAC == w.MAC && en.Withdrawn == w.Withdrawn && slices.Equal(en.Origins, w.Origins) {
			delete(want, k)
			continue
		}
		if _, ok := want[k]; !ok {
			_, _, _ = e.Announce.Delete(wtxn, en)
		}
	}
	for _, en := range want {
		en.Status = reconciler.StatusPending()
		_, _, _ = e.Announce.Insert(wtxn, en)
	}
	keep := map[string]bool{}
	for _, o := range owners {
		keep[o.Group] = true
		if old, _, ok := e.Owners.Get(wtxn, tables.L2OwnerGroupIndex.Query(o.Group)); ok && sameJSON(old, o) {
			continue
		}
		_, _, _ = e.Owners.Insert(wtxn, o)
	}
	for o := range e.Owners.All(wtxn) {
		if !keep[o.Group] {
			_, _, _ = e.Owners.Delete(wtxn, o)
		}
	}
	// In the same transaction as the entries: the responder never sees
	// entries without the deadline they are answered under.
	e.writeFence(wtxn, fresh)
	wtxn.Commit()

	meta := nodeMeta{Term: e.fence.term, Devices: []string{}}
	for d := range e.Devices.All(e.DB.ReadTxn()) {
		if d.Selected {
			meta.Devices = append(meta.Devices, d.Name)
		}
	}
	slices.Sort(meta.Devices)
	for g, k := range p.took {
		meta.TookOver = append(meta.TookOver, claimKey(g, k))
	}
	slices.Sort(meta.TookOver)
	meta.TookOver = slices.Compact(meta.TookOver)
	e.members.setMeta(meta)
}

// collect deletes the Leases of groups that are gone (their Services
// deleted, unannounced or without IPs): the holder does, or the first
// live member if the holder is gone.
func (e *elector) collect(v view) {
	if !v.apiUp || !v.fresh {
		return
	}
	if ok, _ := e.Candidates.Initialized(e.DB.ReadTxn()); !ok {
		return
	}
	exists := map[string]bool{}
	for _, c := range v.groups {
		exists[c.Group] = true
	}
	first := ""
	for n, m := range v.members {
		if m.live && (first == "" || n < first) {
			first = n
		}
	}
	for g, rec := range v.records {
		if exists[g] {
			continue
		}
		holderLive := rec.holder != "" && v.members[rec.holder].live
		if rec.holder == e.self || (!holderLive && first == e.self) {
			e.send(write{group: g, fromVersion: rec.version, why: "its Services are gone"}, true)
		}
	}
}

// send starts a Lease write (or delete) unless one is under way for the
// group. Writes run concurrently, limited by the client's rate limiter.
func (e *elector) send(w write, del bool) {
	if e.inflight[w.group] {
		return
	}
	e.inflight[w.group] = true
	go func() {
		e.writing <- struct{}{}
		defer func() { <-e.writing }()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r := writeResult{w: w, deleted: del}
		if del {
			r.err = deleteRecord(ctx, e.leases, w.group, w.fromVersion)
		} else {
			r.version, r.err = writeRecord(ctx, e.leases, w, e.timings.Duration)
		}
		e.results <- r
		e.members.wake()
	}()
}

// drainResults takes the finished writes in; it reports whether there
// were any.
func (e *elector) drainResults() bool {
	any := false
	for {
		select {
		case r := <-e.results:
			any = true
			e.handleResult(r)
		default:
			return any
		}
	}
}

// handleResult takes a finished write in.
func (e *elector) handleResult(r writeResult) {
	delete(e.inflight, r.w.group)
	switch {
	case r.err == nil && !r.deleted:
		e.overlay[r.w.group] = overlay{fromVersion: r.w.fromVersion, h: holding{holder: r.w.holder, term: r.w.term, version: r.version}}
		e.metrics.writes.WithLabelValues("written").Inc()
		e.Log.Info("Announcement lease written", "lease", r.w.group, "holder", r.w.holder, "term", r.w.term, "why", r.w.why)
	case r.err == nil:
		e.metrics.writes.WithLabelValues("deleted").Inc()
		e.Log.Info("Deleted the announcement lease of a group that is gone", "lease", r.w.group)
	case errors.Is(r.err, errConflict):
		e.metrics.writes.WithLabelValues("conflict").Inc()
	default:
		e.lastFail = time.Now()
		e.metrics.writes.WithLabelValues("failed").Inc()
		e.Log.Warn("Announcement lease write failed", "lease", r.w.group, "error", r.err)
	}
}

// apiUp: Lease writes are worth trying. The watch delivers (the nodes'
// Lease renewals come back through it) and no write failed lately.
func (e *elector) apiUp(now time.Time) bool {
	live := false
	for _, s := range e.seen {
		live = live || now.Sub(s.at) < 2*e.timings.RetryPeriod+time.Second
	}
	return live && now.Sub(e.lastFail) > 2*time.Second
}

// publishFence tells the responder until when it may answer.
func (e *elector) publishFence(fresh bool) {
	wtxn := e.DB.WriteTxn(e.Health)
	e.writeFence(wtxn, fresh)
	wtxn.Commit()
}

func (e *elector) writeFence(wtxn statedb.WriteTxn, fresh bool) {
	h := &tables.L2LeaseHealth{Node: e.self}
	if fresh {
		h.FreshUntil = e.fence.until
	}
	for en := range e.Announce.All(wtxn) {
		if !en.Withdrawn {
			h.HeldLeases++
		}
	}
	if old, _, ok := e.Health.Get(wtxn, tables.L2LeaseHealthNodeIndex.Query(e.self)); ok && old.FreshUntil.Equal(h.FreshUntil) && old.HeldLeases == h.HeldLeases {
		return
	}
	_, _, _ = e.Health.Insert(wtxn, h)
}

// writeMembers copies the member rows into l2-members.
func (e *elector) writeMembers(rows []*tables.L2Member) {
	wtxn := e.DB.WriteTxn(e.Members)
	defer wtxn.Commit()
	for _, m := range rows {
		if old, _, ok := e.Members.Get(wtxn, tables.L2MemberNodeIndex.Query(m.Node)); ok && sameJSON(old, m) {
			continue
		}
		_, _, _ = e.Members.Insert(wtxn, m)
	}
}

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

// recordAnnounced tells a group's Services, in an Event, which node now
// answers for their IPs and where.
func recordAnnounced(events record.EventRecorder, node, lease string, entries []*tables.L2AnnounceEntry) {
	where := map[string][]string{}
	for _, en := range entries {
		for _, svc := range en.Origins {
			where[svc] = append(where[svc], en.IP.String()+" on "+en.NetworkInterface)
		}
	}
	for svc, places := range where {
		ns, name, _ := strings.Cut(svc, "/")
		slices.Sort(places)
		ref := &corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: ns, Name: name}
		events.Eventf(ref, corev1.EventTypeNormal, EventAnnounced, "Node %s announces %s (Lease %s)", node, strings.Join(places, ", "), lease)
	}
}

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
