package election

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
	"github.com/heraldlb/herald/tables"
)

// beatInterval: every node sends every peer a beat this often. Six beats
// fit in the default fence window: a few lost packets cost nothing.
const beatInterval = 50 * time.Millisecond

// kernelCheckTicks: arp_ignore is checked every 5 s.
const kernelCheckTicks = 100

type params struct {
	cell.In

	Config    cpvipconfig.Config
	Parsed    cpvipconfig.Parsed
	Log       *slog.Logger
	DB        *statedb.DB
	Jobs      job.Group
	Readiness statedb.Table[*tables.ControlPlaneReadiness]
	Devices   statedb.Table[*tables.Device]
	Announce  statedb.RWTable[*tables.L2AnnounceEntry]
	Health    statedb.RWTable[*tables.L2LeaseHealth]
	Members   statedb.RWTable[*tables.ControlPlaneMember]
	VIP       statedb.RWTable[*tables.ControlPlaneVIP]
	Metrics   prometheus.Registerer `optional:"true"`
}

// runner runs this node's part of the election and does what it decides.
type runner struct {
	params
	cfg    cpvipconfig.Parsed
	secret []byte
	st     *State
	tr     *transport
	m      *metrics
	vips   []string // normalized, for the beats
	peers  []string

	ready     *tables.ControlPlaneReadiness
	entries   []*tables.L2AnnounceEntry // where each VIP is answered; nil: misplaced
	misplaced error
	// unfenced says why the kernel could answer ARP for a VIP on its own
	// (arp_ignore could not be set): the node is then no candidate.
	unfenced error
	// routeErr: the VIPs' local routes could not be added (tried again
	// with the arp_ignore check).
	routeErr error
	// stopping: the agent stops; its last beat says it is no candidate,
	// so the peers turn to the next node at once.
	stopping   bool
	announced  bool
	withdrawal string // why the entries are being withdrawn; "" when not
	renewed    time.Time
	mismatched map[string]string    // peer → how its configuration differs
	mismatchAt map[string]time.Time // peer → when it was last heard so
	lastWhy    string
}

func registerElection(p params) error {
	secret, err := p.Config.Secret()
	if err != nil {
		return err
	}
	cfg := p.Parsed
	r := &runner{params: p, cfg: cfg, secret: secret, m: newMetrics(), mismatched: map[string]string{}, mismatchAt: map[string]time.Time{}}
	for _, v := range cfg.VIPs {
		r.vips = append(r.vips, v.String())
	}
	for _, q := range cfg.Peers {
		r.peers = append(r.peers, q.Name+"="+q.Addr.String())
	}
	if p.Metrics != nil {
		p.Metrics.MustRegister(r.m.collectors()...)
	}
	p.Jobs.Add(job.OneShot("elect", r.run))
	return nil
}

func (r *runner) rules() Rules {
	var names []string
	for _, q := range r.cfg.Peers {
		names = append(names, q.Name)
	}
	w := r.Config.FenceWindow
	return Rules{Self: r.cfg.Self, Nodes: names, Window: w, Live: w}
}

func (r *runner) run(ctx context.Context, health cell.Health) error {
	if err := tables.WaitInitialized(ctx, r.DB, r.Devices); err != nil {
		return nil
	}
	// What a previous run left: this one owns nothing yet.
	if err := removeRoutes(); err != nil {
		r.Log.Warn("Cannot remove the VIP routes of an earlier run", "error", err)
	}
	tr := r.bindTransport(ctx, health)
	if tr == nil {
		return nil
	}
	r.tr = tr
	defer tr.stop()
	r.st = New(r.rules(), time.Now())
	r.Log.Info("Control-plane VIP election started", "vips", r.vips, "peers", r.peers,
		"quorum", r.st.Quorum(), "address", netip.AddrPortFrom(r.cfg.Addr, uint16(r.Config.PeerPort)), "fence-window", r.Config.FenceWindow)
	health.OK("electing")

	tick := time.NewTicker(beatInterval)
	defer tick.Stop()
	readyWatch, devWatch := r.watchReadiness(), r.watchDevices()
	ticks := 0
	for {
		var entriesWatch <-chan struct{}
		if r.withdrawal != "" {
			var done bool
			if done, entriesWatch = withdrawn(r.DB, r.Announce); done {
				r.finishWithdrawal()
			}
		}
		r.act(time.Now())
		select {
		case <-ctx.Done():
			r.shutdown()
			return nil
		case b := <-tr.in:
			r.receive(b, time.Now())
		case <-tick.C:
			r.beat(time.Now())
			r.publish(time.Now())
			r.forgetMismatches(time.Now())
			if ticks++; ticks%kernelCheckTicks == 0 {
				r.checkKernel()
			}
		case <-readyWatch:
			readyWatch = r.watchReadiness()
		case <-devWatch:
			devWatch = r.watchDevices()
		case <-entriesWatch:
		}
	}
}

// watchReadiness reads this node's readiness row.
func (r *runner) watchReadiness() <-chan struct{} {
	ready, _, watch, _ := r.Readiness.GetWatch(r.DB.ReadTxn(), tables.ControlPlaneReadinessNodeIndex.Query(r.cfg.Self))
	r.ready = ready
	return watch
}

// watchDevices places the VIPs on the devices.
func (r *runner) watchDevices() <-chan struct{} {
	devs, watch := r.Devices.AllWatch(r.DB.ReadTxn())
	r.placeVIPs(statedb.Collect(devs))
	return watch
}

// eligible: the local API server is ready and every VIP has its device.
func (r *runner) eligible() bool {
	return !r.stopping && r.ready != nil && r.ready.Eligible && r.misplaced == nil && r.unfenced == nil && r.routeErr == nil
}

// placeVIPs finds the devices of the VIPs, and says so when that changes.
func (r *runner) placeVIPs(devs []*tables.Device) {
	entries, err := place(r.cfg.VIPs, devs)
	was := r.misplaced
	r.misplaced = err
	switch {
	case err != nil && (was == nil || was.Error() != err.Error()):
		r.Log.Error("This node cannot announce the VIPs and takes no part as a candidate", "error", err)
		r.m.configErrors.WithLabelValues("vip-subnet").Set(1)
	case err == nil && was != nil:
		r.Log.Info("Every VIP is on a subnet of a selected device again")
		r.m.configErrors.WithLabelValues("vip-subnet").Set(0)
	}
	if err != nil {
		r.entries = nil
		return
	}
	r.entries = entries
	r.checkKernel()
}

// checkKernel makes sure the kernel does not answer ARP for the VIPs
// itself: when the devices change, and every few seconds (someone may
// reset arp_ignore).
func (r *runner) checkKernel() {
	if r.entries == nil {
		return
	}
	if r.routeErr != nil {
		// Try the routes again: eligible, this node may win and add them.
		r.routeErr = nil
		r.m.configErrors.WithLabelValues("local-route").Set(0)
	}
	changed, err := quietKernel(r.Config.SysctlDir, r.entries)
	switch {
	case err != nil && r.unfenced == nil:
		r.Log.Error("Cannot keep the kernel from answering ARP for the VIPs: this node takes no part as a candidate", "error", err)
		r.m.configErrors.WithLabelValues("arp-ignore").Set(1)
	case err == nil && r.unfenced != nil:
		r.Log.Info("arp_ignore is set: this node is a candidate again")
		r.m.configErrors.WithLabelValues("arp-ignore").Set(0)
	case err == nil && len(changed) > 0:
		r.Log.Info("Set arp_ignore to 1, so that only the responder answers ARP for the VIPs", "devices", changed)
	}
	r.unfenced = err
}

// beat is this node's turn: a beat to every peer.
func (r *runner) beat(now time.Time) {
	r.st.SetEligible(r.eligible())
	b := r.st.Tick(now)
	msg := encode(wireMessage{Beat: &b, VIPs: r.vips, Peers: r.peers})
	for _, q := range r.cfg.Peers {
		if q.Name != r.cfg.Self {
			r.tr.send(q.Name, q.Addr, r.Config.PeerPort, msg)
		}
	}
}

// receive handles one message from a peer.
func (r *runner) receive(b []byte, now time.Time) {
	m, err := decode(b)
	if err != nil {
		r.Log.Debug("Dropped a message", "error", err)
		return
	}
	from := m.from()
	if !r.agrees(m, from, now) {
		return
	}
	if m.Beat != nil {
		r.st.SetEligible(r.eligible())
		if g := r.st.OnBeat(*m.Beat, now); g != nil {
			q := r.cfg.Peers[slices.IndexFunc(r.cfg.Peers, func(q cpvipconfig.Peer) bool { return q.Name == from })]
			r.tr.send(q.Name, q.Addr, r.Config.PeerPort, encode(wireMessage{Grant: g, VIPs: r.vips, Peers: r.peers}))
		}
		return
	}
	r.st.OnGrant(*m.Grant)
}

// act does what the election decided: take the VIPs, keep the deadline
// current, or give them up.
func (r *runner) act(now time.Time) {
	owning := r.st.Owning(now)
	switch {
	case r.withdrawal != "":
		// Waiting for the responder (run's loop).
	case r.announced && !owning:
		r.startWithdrawal("the election's deadline passed without a quorum renewing it")
	case r.announced && r.st.MustWithdraw(now):
		r.startWithdrawal(fmt.Sprintf("node %q is preferred now", r.st.Preferred(now)))
	case r.announced:
		if d := r.st.Deadline(); !d.Equal(r.renewed) {
			renewDeadline(r.DB, r.Health, r.cfg.Self, len(r.entries), d)
			r.renewed = d
		}
	case owning && r.st.Preferred(now) == r.cfg.Self && r.entries != nil:
		if err := addRoutes(r.entries); err != nil {
			// Not a candidate until it works (checked again with
			// arp_ignore): nothing was announced, so the others may take
			// over at once.
			r.Log.Error("Cannot make the VIPs local addresses: this node takes no part as a candidate", "error", err)
			r.routeErr = err
			r.m.configErrors.WithLabelValues("local-route").Set(1)
			r.st.SetEligible(false)
			r.st.Release()
			return
		}
		r.renewed = r.st.Deadline()
		writeEntries(r.DB, r.Announce, r.Health, r.cfg.Self, r.entries, r.renewed)
		r.announced = true
		r.m.owner.Set(1)
		r.m.takeovers.Inc()
		r.Log.Info("Took the VIPs over: a quorum granted this node", "vips", r.vips, "until", r.renewed)
	}
}

func (r *runner) startWithdrawal(why string) {
	r.withdrawal = why
	r.Log.Info("Giving the VIPs up", "reason", why)
	markWithdrawn(r.DB, r.Announce)
}

// finishWithdrawal runs once the responder confirmed the VIPs out of its
// maps: then this node answers for nothing, and may say so.
func (r *runner) finishWithdrawal() {
	clearEntries(r.DB, r.Announce, r.Health, r.cfg.Self)
	if err := removeRoutes(); err != nil {
		r.Log.Warn("Cannot remove the VIP routes", "error", err)
	}
	r.st.Release()
	r.Log.Info("Gave the VIPs up: the responder no longer answers for them", "reason", r.withdrawal)
	r.withdrawal, r.announced, r.renewed = "", false, time.Time{}
	r.m.owner.Set(0)
}

// shutdown gives the VIPs up before the agent stops, and tells the peers,
// so that one of them takes over at once rather than after the window.
func (r *runner) shutdown() {
	r.stopping = true
	if r.announced {
		r.startWithdrawal("the agent is stopping")
		deadline := time.After(2 * time.Second)
		for {
			done, watch := withdrawn(r.DB, r.Announce)
			if done {
				r.finishWithdrawal()
				break
			}
			select {
			case <-watch:
			case <-deadline:
				r.Log.Warn("The responder did not confirm the VIPs out in time; the peers wait out the fence window")
				return
			}
		}
	}
	r.beat(time.Now())
}
