package devices

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/tables"
)

// waitTimeout bounds every wait for the table to reach an expected state.
const waitTimeout = 10 * time.Second

// TestWatcher runs the cell against real netlink, in a network namespace
// of its own: devices and addresses change there, the table follows.
func TestWatcher(t *testing.T) {
	ns := newTestNetNS(t)
	nlh, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nlh.Close)

	// veth-a (198.18.5.1/24, fd00:5::1/64) <-> veth-b, plus a device with
	// no global address: a dummy where the kernel has them.
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth-a"}, PeerName: "veth-b"}
	must(t, nlh.LinkAdd(veth))
	extra := "dummy0"
	if err := nlh.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: extra}}); err != nil {
		t.Logf("no dummy devices here (%v); using a bridge instead", err)
		extra = "extra0"
		must(t, nlh.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: extra}}))
	}
	vethA, vethB, extraLink := link(t, nlh, "veth-a"), link(t, nlh, "veth-b"), link(t, nlh, extra)
	must(t, nlh.AddrAdd(vethA, addr(t, "198.18.5.1/24")))
	must(t, nlh.AddrAdd(vethA, addr(t, "fd00:5::1/64")))
	for _, l := range []netlink.Link{vethA, vethB, extraLink} {
		must(t, nlh.LinkSetUp(l))
	}

	t.Run("default selection", func(t *testing.T) {
		db, tbl := startHive(t, ns, l2Announcements)

		// The devices and addresses were there before the start: the
		// table holds them as soon as it is initialized.
		txn := waitInitialized(t, db, tbl)
		expect(t, txn, tbl, "lo", selectedAs(false, "loopback"))
		expect(t, txn, tbl, "veth-a", selectedAs(true, ""), hasAddrs("198.18.5.1", "fd00:5::1"),
			isType("veth"), func(d *tables.Device) error {
				if d.Index != vethA.Attrs().Index || d.HWAddr.String() != vethA.Attrs().HardwareAddr.String() ||
					d.MTU != vethA.Attrs().MTU || d.Flags&net.FlagUp == 0 {
					return fmt.Errorf("attributes differ from the kernel's: %+v", d)
				}
				return nil
			})
		expect(t, txn, tbl, "veth-b", selectedAs(false, "no global unicast address"))
		expect(t, txn, tbl, extra, selectedAs(false, "no global unicast address"))

		// Removing an address updates Addresses.
		must(t, nlh.AddrDel(vethA, addr(t, "fd00:5::1/64")))
		waitDevice(t, db, tbl, "veth-a", hasAddrs("198.18.5.1"), lacksAddrs("fd00:5::1"), selectedAs(true, ""))

		// A device set down stays listed, not selected.
		must(t, nlh.LinkSetDown(vethA))
		waitDevice(t, db, tbl, "veth-a", selectedAs(false, "down"))
		must(t, nlh.LinkSetUp(vethA))
		waitDevice(t, db, tbl, "veth-a", selectedAs(true, ""))

		// A deleted device disappears.
		must(t, nlh.LinkDel(extraLink))
		waitFor(t, db, tbl, extra+" gone", func(txn statedb.ReadTxn) error {
			if _, _, ok := tbl.Get(txn, tables.DeviceNameIndex.Query(extra)); ok {
				return errors.New("still listed by name")
			}
			if _, _, ok := tbl.Get(txn, tables.DeviceIndexIndex.Query(extraLink.Attrs().Index)); ok {
				return errors.New("still listed by index")
			}
			return nil
		})

		// A device without a MAC is listed, not selected.
		if inNetNS(t, ns, func() error {
			return netlink.LinkAdd(&netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: "tun0"}, Mode: netlink.TUNTAP_MODE_TUN})
		}) {
			tun := link(t, nlh, "tun0")
			must(t, nlh.AddrAdd(tun, addr(t, "198.18.6.1/24")))
			must(t, nlh.LinkSetUp(tun))
			waitDevice(t, db, tbl, "tun0", hasAddrs("198.18.6.1"), selectedAs(false, "no hardware address"))
		}
	})

	// L2 pod announcements find their interface in the table: it is
	// filled with them alone too.
	t.Run("pod announcements alone", func(t *testing.T) {
		db, tbl := startHive(t, ns, []tables.DeviceNeed{{By: "l2-announcements"}, {By: "l2-pod-announcements", Needed: true}})
		txn := waitInitialized(t, db, tbl)
		expect(t, txn, tbl, "veth-a", hasAddrs("198.18.5.1"), isType("veth"))
	})

	t.Run("devices flag", func(t *testing.T) {
		db, tbl := startHive(t, ns, l2Announcements, "--devices=veth-[b]")

		// veth-b has no global address but is named; veth-a is not.
		txn := waitInitialized(t, db, tbl)
		expect(t, txn, tbl, "veth-b", selectedAs(true, ""))
		expect(t, txn, tbl, "veth-a", selectedAs(false, "not matched by --devices"))
		expect(t, txn, tbl, "lo", selectedAs(false, "loopback"))

		// A bridge port is not selected, even when named.
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
		if err := nlh.LinkAdd(br); err != nil {
			t.Fatalf("cannot create a bridge: %v", err)
		}
		must(t, nlh.LinkSetMaster(vethB, br))
		waitDevice(t, db, tbl, "veth-b", selectedAs(false, "enslaved to br0"))
		must(t, nlh.LinkSetNoMaster(vethB))
		waitDevice(t, db, tbl, "veth-b", selectedAs(true, ""))
	})
}

func TestInvalidDevicesPattern(t *testing.T) {
	h := newHive(currentNetNS, l2Announcements)
	hive.AddConfigOverride(h, func(c *Config) { c.Devices = []string{"eth0", "eth[0-9"} })
	log := hivetest.Logger(t, hivetest.LogLevel(slog.LevelError))
	err := h.Start(log, context.Background())
	if err == nil {
		_ = h.Stop(log, context.Background())
		t.Fatal("started with an invalid pattern")
	}
	if !strings.Contains(err.Error(), `devices: invalid pattern "eth[0-9"`) {
		t.Errorf("error does not name the flag and the pattern: %v", err)
	}
}

// l2Announcements is what the L2 announcements feature asks for when on.
var l2Announcements = []tables.DeviceNeed{{By: "l2-announcements", Needed: true}}

// newHive runs the cell with the needs some cells of the agent would
// provide.
func newHive(newNetNS func() netNS, needs []tables.DeviceNeed, extra ...cell.Cell) *hive.Hive {
	cells := append([]cell.Cell{
		job.Cell,
		statedb.Cell,
		cell.SimpleHealthCell,
		cell.Provide(func() (out struct {
			cell.Out
			Needs []tables.DeviceNeed `group:"device-needs,flatten"`
		}) {
			out.Needs = needs
			return out
		}),
		module(newNetNS),
	}, extra...)
	h := hive.NewWithOptions(hive.Options{
		ModulePrivateProviders: cell.ModulePrivateProviders{
			func(r job.Registry, h cell.Health, l *slog.Logger) job.Group {
				return r.NewGroup(h, job.WithLogger(l))
			},
		},
	}, cells...)
	return h
}

// startHive runs the devices cell on ns with L2 announcements on and the
// given flags until the test ends.
func startHive(t *testing.T, ns netns.NsHandle, needs []tables.DeviceNeed, args ...string) (*statedb.DB, statedb.Table[*tables.Device]) {
	t.Helper()
	var (
		db  *statedb.DB
		tbl statedb.Table[*tables.Device]
	)
	h := newHive(func() netNS { return netNS{handle: ns} }, needs,
		cell.Invoke(func(d *statedb.DB, t statedb.Table[*tables.Device]) { db, tbl = d, t }))
	flags := pflag.NewFlagSet("", pflag.ContinueOnError)
	h.RegisterFlags(flags)
	must(t, flags.Parse(args))
	log := hivetest.Logger(t, hivetest.LogLevel(slog.LevelWarn))
	must(t, h.Start(log, context.Background()))
	t.Cleanup(func() {
		if err := h.Stop(log, context.Background()); err != nil {
			t.Error(err)
		}
	})
	return db, tbl
}

// newTestNetNS creates a network namespace for the test and closes it at
// the end; the calling thread returns to its own namespace.
func newTestNetNS(t *testing.T) netns.NsHandle {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root to create a network namespace; run it as root, as make test does")
	}
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New() // creates it and moves this thread into it
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("cannot create a network namespace: %v", err)
	}
	if err := netns.Set(orig); err != nil {
		// The thread stays locked, so Go discards it with the goroutine.
		ns.Close()
		t.Fatalf("cannot return to the original namespace: %v", err)
	}
	runtime.UnlockOSThread()
	t.Cleanup(func() { ns.Close() })
	return ns
}

// inNetNS runs fn on a thread in ns, for the calls that act in the
// caller's namespace rather than through a netlink handle (creating a
// tun device). It reports false, and logs, if fn fails.
func inNetNS(t *testing.T, ns netns.NsHandle, fn func() error) bool {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread is discarded with the goroutine,
		// whatever namespace it is in.
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		cur, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		same := cur.Equal(ns)
		cur.Close()
		if !same {
			errc <- errors.New("not in the test namespace")
			return
		}
		errc <- fn()
	}()
	if err := <-errc; err != nil {
		t.Logf("skipped a step in the test namespace: %v", err)
		return false
	}
	return true
}

func waitInitialized(t *testing.T, db *statedb.DB, tbl statedb.Table[*tables.Device]) statedb.ReadTxn {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		txn := db.ReadTxn()
		ok, watch := tbl.Initialized(txn)
		if ok {
			return txn
		}
		select {
		case <-watch:
		case <-deadline:
			t.Fatal("devices table not initialized")
		}
	}
}

type check func(*tables.Device) error

// waitFor waits until cond holds on the table, failing after waitTimeout.
func waitFor(t *testing.T, db *statedb.DB, tbl statedb.Table[*tables.Device], what string, cond func(statedb.ReadTxn) error) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		txn := db.ReadTxn()
		_, watch := tbl.AllWatch(txn)
		err := cond(txn)
		if err == nil {
			return
		}
		select {
		case <-watch:
		case <-deadline:
			t.Fatalf("%s: %v\n%s", what, err, dump(txn, tbl))
		}
	}
}

// waitDevice waits until the named device passes all checks.
func waitDevice(t *testing.T, db *statedb.DB, tbl statedb.Table[*tables.Device], name string, checks ...check) {
	t.Helper()
	waitFor(t, db, tbl, name, func(txn statedb.ReadTxn) error { return checkDevice(txn, tbl, name, checks) })
}

// expect checks the named device now.
func expect(t *testing.T, txn statedb.ReadTxn, tbl statedb.Table[*tables.Device], name string, checks ...check) {
	t.Helper()
	if err := checkDevice(txn, tbl, name, checks); err != nil {
		t.Errorf("%s: %v\n%s", name, err, dump(txn, tbl))
	}
}

func checkDevice(txn statedb.ReadTxn, tbl statedb.Table[*tables.Device], name string, checks []check) error {
	d, _, ok := tbl.Get(txn, tables.DeviceNameIndex.Query(name))
	if !ok {
		return errors.New("not in the table")
	}
	for _, c := range checks {
		if err := c(d); err != nil {
			return err
		}
	}
	return nil
}

func selectedAs(selected bool, reason string) check {
	return func(d *tables.Device) error {
		if d.Selected != selected || d.NotSelectedReason != reason {
			return fmt.Errorf("selected %v (%q), want %v (%q)", d.Selected, d.NotSelectedReason, selected, reason)
		}
		return nil
	}
}

func isType(typ string) check {
	return func(d *tables.Device) error {
		if d.Type != typ {
			return fmt.Errorf("type %q, want %q", d.Type, typ)
		}
		return nil
	}
}

func hasAddrs(want ...string) check {
	return func(d *tables.Device) error {
		for _, w := range want {
			if !slices.ContainsFunc(d.Addresses, func(a tables.DeviceAddress) bool { return a.Addr.String() == w }) {
				return fmt.Errorf("no address %s in %v", w, d.Addresses)
			}
		}
		return nil
	}
}

func lacksAddrs(unwanted ...string) check {
	return func(d *tables.Device) error {
		for _, u := range unwanted {
			if slices.ContainsFunc(d.Addresses, func(a tables.DeviceAddress) bool { return a.Addr.String() == u }) {
				return fmt.Errorf("address %s still in %v", u, d.Addresses)
			}
		}
		return nil
	}
}

func dump(txn statedb.ReadTxn, tbl statedb.Table[*tables.Device]) string {
	var b strings.Builder
	b.WriteString(strings.Join((&tables.Device{}).TableHeader(), "\t") + "\treason\n")
	for d := range tbl.All(txn) {
		b.WriteString(strings.Join(d.TableRow(), "\t") + "\t" + d.NotSelectedReason + "\n")
	}
	return b.String()
}

func link(t *testing.T, h *netlink.Handle, name string) netlink.Link {
	t.Helper()
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func addr(t *testing.T, cidr string) *netlink.Addr {
	t.Helper()
	p := netip.MustParsePrefix(cidr)
	a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
	if p.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD
	}
	return a
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
