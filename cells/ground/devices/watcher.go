package devices

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/tables"
)

// netNS is the network namespace whose devices the cell lists. The agent
// lists its own (netns.None() means "the namespace of the caller"); tests
// pass one they created, so they never see or touch the host's devices.
// The handle is only read: whoever opened it closes it.
type netNS struct{ handle netns.NsHandle }

func currentNetNS() netNS { return netNS{handle: netns.None()} }

const (
	// maxBatch bounds how many queued updates go into one transaction.
	maxBatch = 1000
	// Resubscription delays after a netlink failure.
	minRetryDelay = 100 * time.Millisecond
	maxRetryDelay = 30 * time.Second
)

type watcherParams struct {
	cell.In

	Config Config
	// Needs are the cells' (tables.DeviceNeed): the table is filled only
	// while one of them needs it.
	Needs []tables.DeviceNeed `group:"device-needs"`
	DB    *statedb.DB
	Table statedb.RWTable[*tables.Device]
	NetNS netNS
	Jobs  job.Group
	Log   *slog.Logger
}

// registerWatcher checks --devices (a bad pattern fails start-up) and adds
// the job that fills the table.
func registerWatcher(p watcherParams) error {
	pats, err := parsePatterns(p.Config.Devices)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(p.Needs, func(n tables.DeviceNeed) bool { return n.Needed }) {
		// Nobody needs devices (L2 announcements of Services or of pods
		// and BGP are off): the agent does not touch netlink for devices and the
		// table stays empty.
		return nil
	}
	w := &watcher{db: p.DB, table: p.Table, ns: p.NetNS, patterns: pats, log: p.Log}
	wtxn := p.DB.WriteTxn(p.Table)
	w.initDone = p.Table.RegisterInitializer(wtxn, "netlink")
	wtxn.Commit()
	p.Jobs.Add(job.OneShot("watch-netlink", w.run))
	return nil
}

type watcher struct {
	db       *statedb.DB
	table    statedb.RWTable[*tables.Device]
	ns       netNS
	patterns patterns
	log      *slog.Logger
	// initDone marks the table initialized; nil once called.
	initDone func(statedb.WriteTxn)
}

// run keeps the table equal to the kernel's devices until the agent
// stops. When netlink fails (a receive buffer overrun loses updates, a
// dump is interrupted), it subscribes again and resynchronizes from a
// fresh dump.
func (w *watcher) run(ctx context.Context, health cell.Health) error {
	delay := minRetryDelay
	for {
		synced, err := w.watch(ctx, health)
		if ctx.Err() != nil {
			return nil
		}
		if synced {
			delay = minRetryDelay
		}
		w.log.Warn("Netlink updates failed, resubscribing", "error", err, "delay", delay)
		health.Degraded("netlink updates failed", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetryDelay)
	}
}

// watch subscribes to link and address updates with the existing ones
// dumped first, and writes the table once the initial state is complete,
// then after every batch of updates. It returns when ctx ends (nil error)
// or netlink fails; synced tells whether the initial state was reached.
func (w *watcher) watch(ctx context.Context, health cell.Health) (synced bool, err error) {
	var (
		done     = make(chan struct{}) // closing it closes the subscription sockets
		stopping atomic.Bool
		failed   = make(chan error, 1)
		linkCh   chan netlink.LinkUpdate
		addrCh   chan netlink.AddrUpdate
	)
	defer func() {
		stopping.Store(true)
		close(done)
		// netlink's readers close their channel once the socket is closed,
		// but may be blocked handing over one last update first.
		if linkCh != nil {
			for range linkCh {
			}
		}
		if addrCh != nil {
			for range addrCh {
			}
		}
	}()
	// Any error from a subscription (lost updates, interrupted dump,
	// garbage) makes us start over: a fresh dump repairs whatever was lost.
	onError := func(err error) {
		if stopping.Load() {
			return // the sockets were closed on purpose
		}
		select {
		case failed <- err:
		default:
		}
	}

	ns := w.ns.handle
	lc := make(chan netlink.LinkUpdate, 128)
	if err := netlink.LinkSubscribeWithOptions(lc, done, netlink.LinkSubscribeOptions{
		Namespace: &ns, ErrorCallback: onError, ListExisting: true,
	}); err != nil {
		return false, fmt.Errorf("subscribe to link updates: %w", err)
	}
	linkCh = lc
	ac := make(chan netlink.AddrUpdate, 128)
	if err := netlink.AddrSubscribeWithOptions(ac, done, netlink.AddrSubscribeOptions{
		Namespace: &ns, ErrorCallback: onError, ListExisting: true,
	}); err != nil {
		return false, fmt.Errorf("subscribe to address updates: %w", err)
	}
	addrCh = ac

	// netlink does not say where the dumps end. Everything that exists
	// now, after subscribing, arrives as part of a dump or as a later
	// update; the initial state is complete once all of it has arrived.
	pending, err := w.listExisting()
	if err != nil {
		return false, err
	}

	return w.follow(ctx, health, pending, linkCh, addrCh, failed)
}

// follow applies the updates to a model of the kernel's devices, and
// writes the table once pending (the initial state) is complete, then
// after every batch of updates. It returns when ctx ends (nil error) or a
// subscription fails; synced tells whether the initial state was reached.
func (w *watcher) follow(ctx context.Context, health cell.Health, pending *initialState, linkCh <-chan netlink.LinkUpdate, addrCh <-chan netlink.AddrUpdate, failed <-chan error) (synced bool, err error) {
	m := newModel()
	onLink := func(u netlink.LinkUpdate, ok bool) error {
		if !ok {
			return subscriptionEnded("link", failed)
		}
		if idx, ok := m.applyLink(u); ok {
			pending.sawLink(idx)
		}
		return nil
	}
	onAddr := func(u netlink.AddrUpdate, ok bool) error {
		if !ok {
			return subscriptionEnded("address", failed)
		}
		if k, ok := m.applyAddr(u); ok {
			pending.sawAddr(k)
		}
		return nil
	}

	for {
		if !synced && pending.complete() {
			synced = true
			n := w.write(m)
			w.log.Info("Devices synced", "devices", n)
			health.OK("synced")
		}

		select {
		case u, ok := <-linkCh:
			err = onLink(u, ok)
		case u, ok := <-addrCh:
			err = onAddr(u, ok)
		case err = <-failed:
		case <-ctx.Done():
			return synced, nil
		}
		// Take whatever else is queued: a burst becomes one transaction.
	batch:
		for i := 0; err == nil && i < maxBatch; i++ {
			select {
			case u, ok := <-linkCh:
				err = onLink(u, ok)
			case u, ok := <-addrCh:
				err = onAddr(u, ok)
			default:
				break batch
			}
		}
		if err != nil {
			return synced, err
		}

		if synced {
			w.write(m)
		}
	}
}

func subscriptionEnded(what string, failed <-chan error) error {
	select {
	case err := <-failed:
		return fmt.Errorf("%s updates: %w", what, err)
	default:
		return fmt.Errorf("%s updates: subscription ended", what)
	}
}

// listExisting lists the links and addresses that exist now.
func (w *watcher) listExisting() (*initialState, error) {
	h, err := netlink.NewHandleAt(w.ns.handle, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink handle: %w", err)
	}
	defer h.Close()
	var (
		links []netlink.Link
		addrs []netlink.Addr
	)
	// An interrupted dump may miss entries (then the table is marked
	// initialized a little early, still correct); retry a few times.
	for range 5 {
		links, err = h.LinkList()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("list links: %w", err)
	}
	for range 5 {
		addrs, err = h.AddrList(nil, netlink.FAMILY_ALL)
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	s := &initialState{links: map[int]struct{}{}, addrs: map[addrKey]struct{}{}}
	for _, l := range links {
		s.links[l.Attrs().Index] = struct{}{}
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			s.addrs[addrKey{a.LinkIndex, ip.Unmap()}] = struct{}{}
		}
	}
	return s, nil
}

// write makes the table equal to the model, recomputing every device's
// selection, in one transaction. It returns the number of devices.
func (w *watcher) write(m *model) int {
	rows := m.devices(w.patterns)
	wtxn := w.db.WriteTxn(w.table)
	defer wtxn.Abort()

	// Delete the rows of devices that are gone or renamed first, so the
	// name index never holds two rows for one name (eth0 and eth1
	// swapping names).
	for _, old := range statedb.Collect(w.table.All(wtxn)) {
		if d, ok := rows[old.Index]; !ok || d.Name != old.Name {
			_, _, _ = w.table.Delete(wtxn, old)
			if !ok && old.Selected {
				w.log.Info("Selected device removed", "device", old.Name)
			}
		}
	}
	for _, idx := range slices.Sorted(maps.Keys(rows)) {
		d := rows[idx]
		old, _, found := w.table.Get(wtxn, tables.DeviceIndexIndex.Query(idx))
		if found && old.Equal(d) {
			continue
		}
		if _, _, err := w.table.Insert(wtxn, d); err != nil {
			w.log.Error("Cannot write device", "device", d.Name, "error", err)
			continue
		}
		switch {
		case d.Selected && (!found || !old.Selected):
			w.log.Info("Device selected", "device", d.Name)
		case !d.Selected && found && old.Selected:
			w.log.Info("Device no longer selected", "device", d.Name, "reason", d.NotSelectedReason)
		}
	}
	if w.initDone != nil {
		w.initDone(wtxn)
		w.initDone = nil
	}
	wtxn.Commit()
	return len(rows)
}
