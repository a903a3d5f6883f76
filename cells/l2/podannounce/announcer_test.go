package podannounce

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/statedb"
	dto "github.com/prometheus/client_model/go"

	"github.com/heraldlb/herald/tables"
)

// The announcer against real statedb tables that the test writes, and a
// fake sender that records what would have gone out (test/multipool sends
// real packets).

var (
	eth0MAC = tables.HardwareAddr{0x02, 0x48, 0x4c, 0x00, 0x04, 0x0b}
	start   = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
)

type garp struct {
	ifindex int
	ip      netip.Addr
	mac     string
}

func (g garp) String() string { return fmt.Sprintf("%s@%d/%s", g.ip, g.ifindex, g.mac) }

// fixture is one announcer with its tables; the test drives its rounds.
type fixture struct {
	t       *testing.T
	db      *statedb.DB
	allocs  statedb.RWTable[*tables.PodIPAllocation]
	devs    statedb.RWTable[*tables.Device]
	a       *announcer
	changes statedb.ChangeIterator[*tables.PodIPAllocation]
	health  *healthRec

	mu    sync.Mutex
	sent  []garp
	fails int // the next this many sends fail
}

func newFixture(t *testing.T) *fixture {
	db := statedb.New()
	if err := db.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Stop() })
	allocs, err := tables.NewPodIPAllocationsTable(db)
	if err != nil {
		t.Fatal(err)
	}
	devs, err := tables.NewDevicesTable(db)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, allocs: allocs, devs: devs, health: &healthRec{}}
	f.a = &announcer{
		db: db, allocations: allocs, devices: devs, metrics: newMetrics("node1"),
		log:     hivetest.Logger(t, hivetest.LogLevel(slog.LevelDebug)),
		iface:   "eth0",
		send:    f.send,
		tracker: newTracker(start),
		// Short, for TestRunRetries; round ignores them.
		minRetry: time.Millisecond, maxRetry: 4 * time.Millisecond,
	}
	wtxn := db.WriteTxn(allocs)
	f.changes, err = allocs.Changes(wtxn)
	wtxn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.changes.Close)
	return f
}

func (f *fixture) send(ifindex int, ip netip.Addr, mac net.HardwareAddr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fails > 0 {
		f.fails--
		return errors.New("sendto: network is down")
	}
	f.sent = append(f.sent, garp{ifindex, ip, mac.String()})
	return nil
}

// takeSent returns what was sent since the last call.
func (f *fixture) takeSent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, g := range f.sent {
		out = append(out, g.String())
	}
	f.sent = nil
	return out
}

// round runs one round that may send.
func (f *fixture) round() (watches, outcome) {
	return f.a.round(context.Background(), f.health, true, f.changes)
}

// expectSent runs a round and checks what went out in it.
func (f *fixture) expectSent(want ...string) {
	f.t.Helper()
	f.round()
	if got := f.takeSent(); !slices.Equal(got, want) {
		f.t.Fatalf("sent %v, want %v (interface: %s)", got, want, f.health.last)
	}
}

func (f *fixture) expectState(want string) {
	f.t.Helper()
	if !strings.Contains(f.health.last, want) {
		f.t.Fatalf("health %q, want it to contain %q", f.health.last, want)
	}
}

func (f *fixture) allocate(rows ...*tables.PodIPAllocation) {
	wtxn := f.db.WriteTxn(f.allocs)
	for _, r := range rows {
		if _, _, err := f.allocs.Insert(wtxn, r); err != nil {
			f.t.Fatal(err)
		}
	}
	wtxn.Commit()
}

func (f *fixture) release(rows ...*tables.PodIPAllocation) {
	wtxn := f.db.WriteTxn(f.allocs)
	for _, r := range rows {
		if _, _, err := f.allocs.Delete(wtxn, r); err != nil {
			f.t.Fatal(err)
		}
	}
	wtxn.Commit()
}

// setDevice writes a device row (nil removes eth0).
func (f *fixture) setDevice(d *tables.Device) {
	wtxn := f.db.WriteTxn(f.devs)
	if d == nil {
		_, _, _ = f.devs.Delete(wtxn, &tables.Device{Index: 11})
	} else if _, _, err := f.devs.Insert(wtxn, d); err != nil {
		f.t.Fatal(err)
	}
	wtxn.Commit()
}

func eth0(mod func(*tables.Device)) *tables.Device {
	d := &tables.Device{Index: 11, Name: "eth0", Type: "veth", HWAddr: eth0MAC, Flags: net.FlagUp | net.FlagBroadcast, OperStatus: "up"}
	if mod != nil {
		mod(d)
	}
	return d
}

func pod(ip, container string, since time.Time) *tables.PodIPAllocation {
	return &tables.PodIPAllocation{
		IP: netip.MustParseAddr(ip), Network: "herald", ContainerID: container, IfName: "eth0",
		PodNS: "ns", PodName: "pod-" + container, Since: since,
	}
}

func counter(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

type healthRec struct{ last string }

func (h *healthRec) OK(status string)                { h.last = status }
func (h *healthRec) Stopped(reason string)           { h.last = "stopped: " + reason }
func (h *healthRec) Degraded(reason string, _ error) { h.last = "degraded: " + reason }
func (h *healthRec) NewScope(string) cell.Health     { return h }
func (h *healthRec) Close()                          {}

const garpA = "198.18.64.5@11/02:48:4c:00:04:0b"

// TestAnnouncesOnceWhenInterfaceAppears: an address allocated while the
// interface is missing is announced once it appears, with its MAC; IPv6
// and restored addresses are not; a flapping interface announces nothing
// again.
func TestAnnouncesOnceWhenInterfaceAppears(t *testing.T) {
	f := newFixture(t)
	f.allocate(
		pod("198.18.64.5", "a", start.Add(time.Second)),
		pod("fd00:64::5", "a", start.Add(time.Second)),
		pod("198.18.64.6", "restored", start.Add(-time.Hour)),
	)
	w, _ := f.round()
	if got := f.takeSent(); len(got) != 0 {
		t.Fatalf("sent %v without an interface", got)
	}
	f.expectState("waiting for eth0: not found")

	f.setDevice(eth0(nil))
	if !closed(w.device) {
		t.Fatal("the interface appearing does not end the wait")
	}
	f.expectSent(garpA)
	f.expectState("announcing pod addresses on eth0 (ifindex 11, 02:48:4c:00:04:0b)")
	if s, fl := counter(t, f.a.metrics.sent), counter(t, f.a.metrics.failed); s != 1 || fl != 0 {
		t.Errorf("counters sent %v failed %v, want 1 and 0", s, fl)
	}
	f.expectSent()

	// Down, gone, back: as Cilium, nothing is announced again.
	f.setDevice(eth0(func(d *tables.Device) { d.Flags &^= net.FlagUp }))
	f.expectSent()
	f.expectState("waiting for eth0: down")
	f.setDevice(nil)
	f.expectSent()
	f.setDevice(eth0(nil))
	f.expectSent()

	// A later allocation goes out on the next round.
	f.allocate(pod("198.18.64.7", "b", start.Add(time.Minute)))
	f.expectSent("198.18.64.7@11/02:48:4c:00:04:0b")
}

// TestUnusableInterface: announcements wait while the interface cannot
// carry them, and go out when it can.
func TestUnusableInterface(t *testing.T) {
	for _, tt := range []struct {
		name  string
		mod   func(*tables.Device)
		state string
	}{
		{"administratively down", func(d *tables.Device) { d.Flags &^= net.FlagUp }, "down"},
		{"no carrier", func(d *tables.Device) { d.OperStatus = "lower-layer-down" }, "operationally lower-layer-down"},
		{"operationally down", func(d *tables.Device) { d.OperStatus = "down" }, "operationally down"},
		{"no MAC", func(d *tables.Device) { d.HWAddr = nil }, "no MAC address"},
		{"zero MAC", func(d *tables.Device) { d.HWAddr = tables.HardwareAddr{0, 0, 0, 0, 0, 0} }, "no MAC address"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.setDevice(eth0(tt.mod))
			f.allocate(pod("198.18.64.5", "a", start.Add(time.Second)))
			f.expectSent()
			f.expectState("waiting for eth0: " + tt.state)
			f.setDevice(eth0(nil))
			f.expectSent(garpA)
		})
	}
	// Devices without carrier tracking say "unknown": usable.
	f := newFixture(t)
	f.setDevice(eth0(func(d *tables.Device) { d.OperStatus = "unknown" }))
	f.allocate(pod("198.18.64.5", "a", start.Add(time.Second)))
	f.expectSent(garpA)
}

// TestWaitsForDevicesTable: before the devices table is first filled the
// interface is not known missing: no warning, and announcements go out
// once it is filled.
func TestWaitsForDevicesTable(t *testing.T) {
	f := newFixture(t)
	wtxn := f.db.WriteTxn(f.devs)
	done := f.devs.RegisterInitializer(wtxn, "netlink")
	wtxn.Commit()
	f.allocate(pod("198.18.64.5", "a", start.Add(time.Second)))
	w, _ := f.round()
	f.expectState("waiting for the devices table")
	if got := f.takeSent(); len(got) != 0 {
		t.Fatalf("sent %v before the devices table was filled", got)
	}
	wtxn = f.db.WriteTxn(f.devs)
	_, _, _ = f.devs.Insert(wtxn, eth0(nil))
	done(wtxn)
	wtxn.Commit()
	if !closed(w.device) {
		t.Fatal("the devices table being filled does not end the wait")
	}
	f.expectSent(garpA)
}

// TestReleasedBeforeSent: an address released while its announcement
// waited is not announced; a new allocation of it is.
func TestReleasedBeforeSent(t *testing.T) {
	f := newFixture(t)
	a := pod("198.18.64.5", "a", start.Add(time.Second))
	f.allocate(a)
	f.expectSent()
	f.release(a)
	f.setDevice(eth0(nil))
	f.expectSent()
	f.allocate(pod("198.18.64.5", "b", start.Add(time.Minute)))
	f.expectSent(garpA)
}

// TestFailedSendStaysPending: a failed send is counted, stops the round
// (the next ones would fail alike) and is tried again, in order.
func TestFailedSendStaysPending(t *testing.T) {
	f := newFixture(t)
	f.setDevice(eth0(nil))
	f.allocate(pod("198.18.64.5", "a", start.Add(time.Second)))
	f.allocate(pod("198.18.64.9", "b", start.Add(2*time.Second)))
	f.fails = 1
	if _, out := f.round(); out != failed {
		t.Fatalf("outcome %v, want failed", out)
	}
	if got := f.takeSent(); len(got) != 0 || f.fails != 0 {
		t.Fatalf("sent %v; %d failures left: one attempt, failed, was expected", got, f.fails)
	}
	// Not tried while a retry is scheduled.
	if _, out := f.a.round(context.Background(), f.health, false, f.changes); out != nothingSent || len(f.takeSent()) != 0 {
		t.Fatalf("sent while waiting to retry: %v", out)
	}
	f.expectSent(garpA, "198.18.64.9@11/02:48:4c:00:04:0b")
	if s, fl := counter(t, f.a.metrics.sent), counter(t, f.a.metrics.failed); s != 2 || fl != 1 {
		t.Errorf("counters sent %v failed %v, want 2 and 1", s, fl)
	}
}

// TestRunRetries: the job itself retries failed sends on its timer, and
// wakes up for an interface that appears.
func TestRunRetries(t *testing.T) {
	f := newFixture(t)
	f.fails = 3
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.a.run(ctx, &healthRec{}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	f.allocate(pod("198.18.64.5", "a", start.Add(time.Second)))
	f.setDevice(eth0(nil))
	// Bounds the wait only; the job needs milliseconds.
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		sent := slices.Clone(f.sent)
		f.mu.Unlock()
		if len(sent) == 1 && sent[0].String() == garpA {
			break
		}
		if len(sent) > 1 || time.Now().After(deadline) {
			t.Fatalf("sent %v, want %s once after 3 failures", sent, garpA)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestUsable(t *testing.T) {
	for _, tt := range []struct {
		d    *tables.Device
		ok   bool
		why  string
		desc string
	}{
		{eth0(nil), true, "", "up, carrier"},
		{eth0(func(d *tables.Device) { d.OperStatus = "unknown" }), true, "", "no carrier tracking"},
		{eth0(func(d *tables.Device) { d.Flags = net.FlagBroadcast }), false, "down", "admin down"},
		{eth0(func(d *tables.Device) { d.OperStatus = "dormant" }), false, "operationally dormant", "dormant"},
		{eth0(func(d *tables.Device) { d.HWAddr = nil }), false, "no MAC address", "tun"},
	} {
		if ok, why := usable(tt.d); ok != tt.ok || why != tt.why {
			t.Errorf("%s: usable %v %q, want %v %q", tt.desc, ok, why, tt.ok, tt.why)
		}
	}
}
