package podannounce

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/internal/neigh"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Config      Config
	Agent       agentconfig.Config
	Log         *slog.Logger
	DB          *statedb.DB
	Jobs        job.Group
	Allocations statedb.Table[*tables.PodIPAllocation]
	Devices     statedb.Table[*tables.Device]
	Metrics     prometheus.Registerer `optional:"true"`
}

// Delays between attempts after a failed send, doubling up to the most.
const (
	minRetryDelay = time.Second
	maxRetryDelay = 30 * time.Second
)

func register(p params) error {
	if !p.Config.EnableL2PodAnnouncements {
		return nil
	}
	if err := p.Config.validate(); err != nil {
		return err
	}
	// Cilium announces its endpoints whatever the IPAM; Herald knows the
	// addresses of the pods whose IPAM it is, and no others. Refusing to
	// start would take the node's other features down for a setting that
	// merely has nothing to do.
	if !p.Agent.MultiPool() {
		p.Log.Warn("enable-l2-pod-announcements does nothing: pod addresses are known only with ipam: multi-pool",
			"ipam", p.Agent.IPAM)
		return nil
	}
	if !p.Agent.EnableIPv4 {
		p.Log.Warn("enable-l2-pod-announcements does nothing: only IPv4 pod addresses are announced (ARP), and enable-ipv4 is false")
		return nil
	}
	m := newMetrics(p.Agent.Node())
	if p.Metrics != nil {
		p.Metrics.MustRegister(m.garps)
	}
	a := &announcer{
		db: p.DB, allocations: p.Allocations, devices: p.Devices, log: p.Log, metrics: m,
		iface: p.Config.L2PodAnnouncementsInterface,
		send:  neigh.SendGratuitousARP,
		// Taken before the hive starts, so before the node IPAM restores
		// its journal: what it restores is older, what it hands out later
		// is newer.
		tracker:  newTracker(time.Now()),
		minRetry: minRetryDelay, maxRetry: maxRetryDelay,
	}
	p.Jobs.Add(job.OneShot("announce-pods", a.run))
	return nil
}

// announcer follows the allocations and sends what the tracker says.
type announcer struct {
	db          *statedb.DB
	allocations statedb.Table[*tables.PodIPAllocation]
	devices     statedb.Table[*tables.Device]
	log         *slog.Logger
	metrics     *metrics
	iface       string
	send        func(ifindex int, ip netip.Addr, mac net.HardwareAddr) error
	tracker     *tracker

	minRetry, maxRetry time.Duration
	// state is what was last said about the interface, so that it is
	// logged when it changes only.
	state string
}

// run takes the changes of pod-ip-allocations as they come (the first
// batch is every row already there) and announces new addresses. After a
// failed send it tries again after a delay, or at once when the interface
// changes; new allocations meanwhile just join the queue.
func (a *announcer) run(ctx context.Context, health cell.Health) error {
	wtxn := a.db.WriteTxn(a.allocations)
	changes, err := a.allocations.Changes(wtxn)
	wtxn.Commit()
	if err != nil {
		return err
	}
	defer changes.Close()

	delay := a.minRetry
	var retry <-chan time.Time
	for {
		w, outcome := a.round(ctx, health, retry == nil, changes)
		switch outcome {
		case failed:
			retry = time.After(delay)
			delay = min(2*delay, a.maxRetry)
		case allSent:
			delay = a.minRetry
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.allocations:
		case <-w.device:
			retry = nil
		case <-retry:
			retry = nil
		}
	}
}

// outcome of a round's sends.
type outcome int

const (
	nothingSent outcome = iota // nothing pending, or not tried
	allSent
	failed
)

// watches are what ends the wait for the next round.
type watches struct {
	allocations, device <-chan struct{}
}

// round applies the changes since the last one and, if trySend and the
// interface is usable, sends every pending announcement, oldest first,
// until one fails: a failure is almost always the interface's, and the
// others would fail the same way.
func (a *announcer) round(ctx context.Context, health cell.Health, trySend bool, changes statedb.ChangeIterator[*tables.PodIPAllocation]) (watches, outcome) {
	txn := a.db.ReadTxn()
	seq, allocWatch := changes.Next(txn)
	for ch := range seq {
		a.tracker.observe(ch.Object, ch.Deleted)
	}
	w := watches{allocations: allocWatch}
	dev, usable, why, devWatch := a.lookup(txn)
	w.device = devWatch
	a.report(health, dev, usable, why)
	if !usable || !trySend {
		return w, nothingSent
	}
	pending := a.tracker.pending()
	for i, row := range pending {
		if ctx.Err() != nil {
			return w, nothingSent
		}
		if err := a.send(dev.Index, row.IP, net.HardwareAddr(dev.HWAddr)); err != nil {
			a.metrics.failed.Inc()
			a.log.Warn("Gratuitous ARP for a pod address failed; retrying",
				"interface", a.iface, "ip", row.IP, "pod", row.PodNS+"/"+row.PodName,
				"pending", len(pending)-i, "error", err)
			return w, failed
		}
		a.metrics.sent.Inc()
		a.tracker.sent(row)
		a.log.Debug("Announced a pod address", "interface", a.iface, "ip", row.IP, "pod", row.PodNS+"/"+row.PodName)
	}
	if len(pending) == 0 {
		return w, nothingSent
	}
	return w, allSent
}

// lookup finds the interface by name in the devices table and says whether
// announcements can go out on it (why not, if not). Until the devices
// table is first filled, the interface counts as not there yet, without a
// warning.
func (a *announcer) lookup(txn statedb.ReadTxn) (dev *tables.Device, ok bool, why string, watch <-chan struct{}) {
	if init, initWatch := a.devices.Initialized(txn); !init {
		return nil, false, "", initWatch
	}
	dev, _, watch, found := a.devices.GetWatch(txn, tables.DeviceNameIndex.Query(a.iface))
	if !found {
		return nil, false, "not found", watch
	}
	ok, why = usable(dev)
	return dev, ok, why, watch
}

// usable says whether a gratuitous ARP sent on the device reaches the
// network. A device that is administratively down refuses to send; one
// without carrier (operationally down, lower-layer-down) takes the packet
// and drops it, so both wait for the device to come up. "unknown" is what
// devices that track no carrier report (dummy, some virtual NICs).
func usable(d *tables.Device) (bool, string) {
	switch {
	case d.Flags&net.FlagUp == 0:
		return false, "down"
	case d.OperStatus != "up" && d.OperStatus != "unknown" && d.OperStatus != "":
		return false, "operationally " + d.OperStatus
	case d.HWAddr.IsZero():
		return false, "no MAC address"
	}
	return true, ""
}

// report logs and reports the interface's state when it changes. A missing
// or down interface delays announcements but breaks nothing else on the
// node: it is a warning, not a degraded module (which would make the
// agent's Pod unready).
func (a *announcer) report(health cell.Health, dev *tables.Device, usable bool, why string) {
	var state string
	switch {
	case usable:
		state = fmt.Sprintf("announcing pod addresses on %s (ifindex %d, %s)", a.iface, dev.Index, dev.HWAddr)
	case why == "":
		state = "waiting for the devices table"
	default:
		state = fmt.Sprintf("waiting for %s: %s", a.iface, why)
	}
	if state == a.state {
		return
	}
	a.state = state
	health.OK(state)
	switch {
	case usable:
		a.log.Info("Announcing pod addresses", "interface", a.iface, "ifindex", dev.Index, "mac", dev.HWAddr.String())
	case why != "":
		a.log.Warn("Interface of L2 pod announcements unusable; announcements wait for it",
			"interface", a.iface, "reason", why, "pending", len(a.tracker.pending()))
	}
}
