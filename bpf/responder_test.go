/*
Copyright The Herald Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/mdlayher/arp"
	"golang.org/x/sys/unix"
)

const (
	// How long to wait for a reply that must come (returns at the reply).
	replyTimeout = 2 * time.Second
	// How long to wait for a reply that must not come.
	noReplyWait = 250 * time.Millisecond
)

func loadT(tb testing.TB, mode Mode, pinDir string) *Responder {
	tb.Helper()
	requireRoot(tb)
	r, err := Load(mode, pinDir)
	if err != nil {
		tb.Fatalf("Load(%q, %q): %v", mode, pinDir, err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

func TestLoadUnknownMode(t *testing.T) {
	if _, err := Load("tc", ""); err == nil {
		t.Fatal("Load with an unknown mode succeeded")
	}
}

// TestResponderARP sends real ARP requests from the client namespace to the
// node namespace, where the responder is attached, in every mode.
func TestResponderARP(t *testing.T) {
	cases := []struct {
		name string
		mode Mode
		// XDP: force native mode (the default on veth is generic) and
		// give the client's veth NAPI so that XDP_TX frames reach it.
		native bool
	}{
		{"xdp", ModeXDP, false},
		{"xdp-native", ModeXDP, true},
		{"tcx", ModeTCX, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tbd := newTestbed(t)
			r := loadT(t, tc.mode, "")
			if tc.native {
				r.xdpFlags = link.XDPDriverMode
				tbd.passXDPOnClient(t)
			}
			tbd.attach(t, r)
			tbd.attach(t, r) // idempotent
			if got := r.Attached(); len(got) != 1 || got[0] != tbd.nodeIfindex {
				t.Fatalf("Attached() = %v, want [%d]", got, tbd.nodeIfindex)
			}
			if tc.mode == ModeXDP && r.xdpGeneric(tbd.nodeIfindex) == tc.native {
				t.Fatalf("XDP generic mode = %v, want %v", !tc.native, tc.native)
			}
			testResponderARP(t, tbd, r)
		})
	}
}

func testResponderARP(t *testing.T, tbd *testbed, r *Responder) {
	ac := tbd.arpClient(t)
	ifindex := tbd.nodeIfindex

	expectReply := func(ip netip.Addr, wantMAC net.HardwareAddr) {
		t.Helper()
		mac, err := ac.resolve(ip, replyTimeout)
		if err != nil {
			t.Fatalf("resolving %v: %v", ip, err)
		}
		if !bytes.Equal(mac, wantMAC) {
			t.Fatalf("%v resolved to %v, want %v", ip, mac, wantMAC)
		}
	}
	expectNoReply := func(ip netip.Addr) {
		t.Helper()
		mac, err := ac.resolve(ip, noReplyWait)
		if !errors.Is(err, errNoReply) {
			t.Fatalf("resolving %v: got %v, %v; want no reply", ip, mac, err)
		}
	}
	expectSent := func(want uint64) {
		t.Helper()
		entries, err := r.Entries()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IP == tbd.vip && e.Ifindex == ifindex {
				if e.ResponsesSent != want {
					t.Fatalf("responses_sent = %d, want %d", e.ResponsesSent, want)
				}
				return
			}
		}
		t.Fatalf("no entry for %v on %d in %v", tbd.vip, ifindex, entries)
	}

	// An entry, but no heartbeat yet: the agent is not known to be alive.
	if _, err := r.Upsert(tbd.vip, ifindex, tbd.nodeMAC); err != nil {
		t.Fatal(err)
	}
	expectNoReply(tbd.vip)
	expectSent(0)

	if err := r.Heartbeat(time.Minute); err != nil {
		t.Fatal(err)
	}
	expectReply(tbd.vip, tbd.nodeMAC)
	expectSent(1)

	// Not in the map: no reply from the program, and the kernel still
	// answers for the node's own address (the program passes it).
	expectNoReply(tbd.otherIP)
	expectReply(tbd.nodeIP, tbd.nodeMAC)
	// An entry for another interface does not answer on this one.
	if _, err := r.Upsert(tbd.otherIP, ifindex+1000, tbd.nodeMAC); err != nil {
		t.Fatal(err)
	}
	expectNoReply(tbd.otherIP)
	expectSent(1)

	// Gratuitous ARP request for the VIP (sender IP == target IP): ignored.
	if err := ac.c.SetReadDeadline(time.Now().Add(noReplyWait)); err != nil {
		t.Fatal(err)
	}
	if err := ac.send(arp.OperationRequest, tbd.vip, tbd.vip); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.readReply(tbd.vip); !errors.Is(err, errNoReply) {
		t.Fatalf("gratuitous ARP: got %v, want no reply", err)
	}
	// An ARP reply for the VIP is not a question either.
	if err := ac.c.SetReadDeadline(time.Now().Add(noReplyWait)); err != nil {
		t.Fatal(err)
	}
	if err := ac.send(arp.OperationReply, tbd.clientIP, tbd.vip); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.readReply(tbd.vip); !errors.Is(err, errNoReply) {
		t.Fatalf("ARP reply: got %v, want no reply", err)
	}
	expectSent(1)

	// Stale heartbeat: silent until the next heartbeat.
	if err := r.Heartbeat(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	expectNoReply(tbd.vip)
	if err := r.Heartbeat(time.Minute); err != nil {
		t.Fatal(err)
	}
	expectReply(tbd.vip, tbd.nodeMAC)
	expectSent(2)

	// A new MAC for an existing entry keeps its counter.
	otherMAC := net.HardwareAddr{0x02, 0, 0x5e, 0x10, 0, 0x01}
	if _, err := r.Upsert(tbd.vip, ifindex, otherMAC); err != nil {
		t.Fatal(err)
	}
	expectSent(2)
	expectReply(tbd.vip, otherMAC)
	expectSent(3)

	// Deleted: silent.
	if err := r.Delete(tbd.vip, ifindex); err != nil {
		t.Fatal(err)
	}
	expectNoReply(tbd.vip)

	// Detached: silent, although the entry is back.
	if _, err := r.Upsert(tbd.vip, ifindex, tbd.nodeMAC); err != nil {
		t.Fatal(err)
	}
	expectReply(tbd.vip, tbd.nodeMAC)
	expectSent(1)
	if err := r.Detach(ifindex); err != nil {
		t.Fatal(err)
	}
	if err := r.Detach(ifindex); err != nil {
		t.Fatalf("second Detach: %v", err)
	}
	if got := r.Attached(); len(got) != 0 {
		t.Fatalf("Attached() after Detach = %v", got)
	}
	expectNoReply(tbd.vip)
	expectSent(1)

	// Attached again, then closed: Close detaches.
	tbd.attach(t, r)
	expectReply(tbd.vip, tbd.nodeMAC)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	expectNoReply(tbd.vip)
	expectReply(tbd.nodeIP, tbd.nodeMAC)
}

// TestMaps covers the map API without traffic.
func TestMaps(t *testing.T) {
	r := loadT(t, ModeTCX, "")
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	mac2 := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}
	a := netip.MustParseAddr("198.18.0.10")
	b := netip.MustParseAddr("198.18.0.9")

	for _, tc := range []struct {
		ip      netip.Addr
		ifindex int
		mac     net.HardwareAddr
	}{
		{netip.MustParseAddr("fe80::1%eth0"), 1, mac}, // a zone: a link-local, never a VIP
		{netip.Addr{}, 1, mac},
		{a, 0, mac},
		{a, -1, mac},
		{a, 1, net.HardwareAddr{1, 2, 3}},
		{a, 1, nil},
	} {
		if _, err := r.Upsert(tc.ip, tc.ifindex, tc.mac); err == nil {
			t.Errorf("Upsert(%v, %d, %v) succeeded", tc.ip, tc.ifindex, tc.mac)
		}
	}

	// 4in6 is accepted as IPv4.
	if _, err := r.Upsert(netip.AddrFrom16(a.As16()), 7, mac); err != nil {
		t.Fatal(err)
	}
	if created, err := r.Upsert(b, 7, mac); err != nil || !created {
		t.Fatalf("new entry: created=%v err=%v", created, err)
	}
	if _, err := r.Upsert(a, 3, mac2); err != nil {
		t.Fatal(err)
	}
	// IPv6 goes to l2_responder_v6.
	v6 := netip.MustParseAddr("fd00::a")
	if created, err := r.Upsert(v6, 7, mac); err != nil || !created {
		t.Fatalf("new IPv6 entry: created=%v err=%v", created, err)
	}
	if n, err := r.v6.Info(); err != nil || n.Type != ebpf.Hash {
		t.Fatalf("l2_responder_v6: %+v, %v", n, err)
	}

	// The key is the address in network byte order.
	key := key4(t, r, a, 7)
	raw := binary.NativeEndian.AppendUint32(nil, key.Ip4)
	if !bytes.Equal(raw, []byte{198, 18, 0, 10}) {
		t.Fatalf("key bytes %v", raw)
	}

	// Simulate replies, then rewrite the MAC: the counter stays.
	var v l2responderL2ResponderEntry
	if err := r.v4.Lookup(&key, &v); err != nil {
		t.Fatal(err)
	}
	v.ResponsesSent = 41
	if err := r.v4.Update(&key, &v, ebpf.UpdateExist); err != nil {
		t.Fatal(err)
	}
	if created, err := r.Upsert(a, 7, mac2); err != nil || created {
		t.Fatalf("MAC rewrite: created=%v err=%v", created, err)
	}
	if created, err := r.Upsert(a, 7, mac2); err != nil || created { // no-op
		t.Fatalf("no-op: created=%v err=%v", created, err)
	}

	entries, err := r.Entries()
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{b, 7, mac, 0},
		{a, 3, mac2, 0},
		{a, 7, mac2, 41},
		{v6, 7, mac, 0},
	}
	if len(entries) != len(want) {
		t.Fatalf("Entries() = %v, want %v", entries, want)
	}
	for i := range want {
		e, w := entries[i], want[i]
		if e.IP != w.IP || e.Ifindex != w.Ifindex || !bytes.Equal(e.MAC, w.MAC) || e.ResponsesSent != w.ResponsesSent {
			t.Fatalf("Entries()[%d] = %+v, want %+v", i, e, w)
		}
	}

	if err := r.Delete(a, 7); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(a, 7); err != nil {
		t.Fatalf("deleting a missing entry: %v", err)
	}
	if err := r.Delete(v6, 7); err != nil {
		t.Fatal(err)
	}
	if entries, _ := r.Entries(); len(entries) != 2 {
		t.Fatalf("Entries() after Delete = %v", entries)
	}

	// Heartbeat: CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns.
	if err := r.Heartbeat(-time.Second); err == nil {
		t.Fatal("Heartbeat with a negative max age succeeded")
	}
	var before, after unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &before)
	if err := r.Heartbeat(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &after)
	var cfg l2responderL2ResponderConfig
	if err := r.config.Lookup(uint32(0), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.HeartbeatNs < uint64(before.Nano()) || cfg.HeartbeatNs > uint64(after.Nano()) || cfg.MaxAgeNs != uint64(3*time.Second) {
		t.Fatalf("config %+v, heartbeat outside [%d, %d]", cfg, before.Nano(), after.Nano())
	}

	if err := r.Attach(0); err == nil {
		t.Fatal("Attach(0) succeeded")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := r.Upsert(b, 7, mac); !errors.Is(err, errClosed) {
		t.Fatalf("Upsert after Close: %v", err)
	}
	if _, err := r.Entries(); !errors.Is(err, errClosed) {
		t.Fatalf("Entries after Close: %v", err)
	}
	if err := r.Heartbeat(time.Second); !errors.Is(err, errClosed) {
		t.Fatalf("Heartbeat after Close: %v", err)
	}
	if err := r.Attach(1); !errors.Is(err, errClosed) {
		t.Fatalf("Attach after Close: %v", err)
	}
}

// tempBPFFS mounts a bpffs on a temporary directory with EnsureBPFFS.
func tempBPFFS(t *testing.T) string {
	t.Helper()
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "bpffs")
	if err := EnsureBPFFS(dir); err != nil {
		t.Fatal(err)
	}
	// Registered after TempDir: runs before its removal.
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	if ok, err := isBPFFS(dir); err != nil || !ok {
		t.Fatalf("isBPFFS(%s) = %v, %v after EnsureBPFFS", dir, ok, err)
	}
	// Already a bpffs: nothing to do (and no second mount to unmount).
	if err := EnsureBPFFS(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPinnedMapsSurviveReload(t *testing.T) {
	pinDir := filepath.Join(tempBPFFS(t), "herald")
	ip := netip.MustParseAddr("198.18.0.200")
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}

	r1, err := Load(ModeXDP, pinDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Upsert(ip, 5, mac); err != nil {
		t.Fatal(err)
	}
	key := key4(t, r1, ip, 5)
	if err := r1.v4.Update(&key, &l2responderL2ResponderEntry{ResponsesSent: 20, Mac: [6]uint8(mac)}, ebpf.UpdateExist); err != nil {
		t.Fatal(err)
	}
	if err := r1.Heartbeat(time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range pinnedMaps {
		if _, err := os.Stat(filepath.Join(pinDir, name)); err != nil {
			t.Fatalf("pinned map after Close: %v", err)
		}
	}

	// A restart, in the other mode: same maps, same contents.
	r2 := loadT(t, ModeTCX, pinDir)
	entries, err := r2.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].IP != ip || entries[0].Ifindex != 5 || entries[0].ResponsesSent != 20 {
		t.Fatalf("entries after reload: %+v", entries)
	}
	var cfg l2responderL2ResponderConfig
	if err := r2.config.Lookup(uint32(0), &cfg); err != nil || cfg.HeartbeatNs == 0 || cfg.MaxAgeNs != uint64(time.Hour) {
		t.Fatalf("config after reload: %+v, %v", cfg, err)
	}
	r2.Close()

	// A map of an incompatible layout pinned under the name is replaced.
	path := filepath.Join(pinDir, MapResponderV4)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	old, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := old.Pin(path); err != nil {
		t.Fatal(err)
	}
	r3 := loadT(t, ModeXDP, pinDir)
	if entries, err := r3.Entries(); err != nil || len(entries) != 0 {
		t.Fatalf("entries after replacing an incompatible map: %v, %v", entries, err)
	}
	if _, err := r3.Upsert(ip, 5, mac); err != nil {
		t.Fatal(err)
	}
	pinned, err := ebpf.LoadPinnedMap(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close()
	if info, err := pinned.Info(); err != nil || info.ValueSize != 16 {
		t.Fatalf("pinned map after reload: %+v, %v", info, err)
	}
}

// TestLoadMountsSysFsBPF loads with a pin directory under /sys/fs/bpf in a
// private mount namespace whose /sys has no bpffs (as in `ip netns exec`).
func TestLoadMountsSysFsBPF(t *testing.T) {
	requireRoot(t)
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: the runtime discards it, and its
		// mount namespace with it, when this goroutine exits.
		runtime.LockOSThread()
		errc <- func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return fmt.Errorf("a private mount namespace: %w", err)
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return err
			}
			// A fresh sysfs, without the host's mounts below it, as
			// `ip netns exec` does.
			if err := unix.Unmount("/sys", unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmounting /sys in the private mount namespace: %w", err)
			}
			if err := unix.Mount("sysfs", "/sys", "sysfs", 0, ""); err != nil {
				return fmt.Errorf("mounting a fresh sysfs: %w", err)
			}
			if ok, _ := isBPFFS(DefaultBPFFSRoot); ok {
				return errors.New("fresh /sys has a bpffs at /sys/fs/bpf")
			}
			r, err := Load(ModeXDP, DefaultBPFFSRoot+"/herald-test")
			if err != nil {
				return err
			}
			defer r.Close()
			if ok, err := isBPFFS(DefaultBPFFSRoot); err != nil || !ok {
				return errors.New("/sys/fs/bpf not mounted by Load")
			}
			_, err = os.Stat(DefaultBPFFSRoot + "/herald-test/" + MapResponderV4)
			return err
		}()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// key4 is ip's key in l2_responder_v4.
func key4(t testing.TB, r *Responder, ip netip.Addr, ifindex int) l2responderL2ResponderKey {
	t.Helper()
	m, k, err := r.mapKey(ip, ifindex)
	if err != nil || m != r.v4 {
		t.Fatalf("mapKey(%v, %d): map %v, %v; want l2_responder_v4", ip, ifindex, m, err)
	}
	return *k.(*l2responderL2ResponderKey)
}
