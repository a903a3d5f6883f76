package cpvip

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkWatch has the kernel of cp1, then cp2, then both, then cp2 alone
// answer for the VIP (an address on their eth0), and checks that the
// watch names who answered, measures the move and sees the double answers
// of the overlap, and only those.
func checkWatch(t *testing.T, cp *ControlPlane, vip netip.Addr) {
	cp1, cp2 := cp.Nodes[0], cp.Nodes[1]
	defer func() { _ = delVIP(cp1, vip); _ = delVIP(cp2, vip) }()
	w, err := cp.WatchVIP(context.Background(), vip, WatchEvery)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	mustVIP(t, addVIP(cp1, vip))
	poll(t, "cp1 answers", func() error { return owner(w, cp1.MAC()) })
	moved := time.Now()
	mustVIP(t, delVIP(cp1, vip))
	mustVIP(t, addVIP(cp2, vip))
	poll(t, "cp2 answers", func() error { return owner(w, cp2.MAC()) })
	time.Sleep(100 * time.Millisecond)
	bothFrom := time.Now()
	mustVIP(t, addVIP(cp1, vip))
	time.Sleep(200 * time.Millisecond)
	mustVIP(t, delVIP(cp1, vip))
	bothTo := time.Now()
	time.Sleep(200 * time.Millisecond)
	rec := w.Stop()
	t.Log(rec.Format(cp.NodeByMAC))
	if rec.Err != nil {
		t.Fatal(rec.Err)
	}
	if d, ok := rec.Failover(moved, cp1.MAC()); !ok {
		t.Errorf("no failover from cp1 seen")
	} else {
		t.Logf("moved from cp1 to cp2 in %v", d)
	}
	if got := rec.OwnerAt(bothFrom); got != cp2.MAC() {
		t.Errorf("owner before the overlap: %q, want cp2 %s", got, cp2.MAC())
	}
	if len(rec.Doubles) == 0 {
		t.Errorf("no double answer seen while cp1 and cp2 both had %s", vip)
	}
	for _, d := range rec.Doubles {
		if d.At.Before(bothFrom) || d.At.After(bothTo.Add(WatchEvery)) {
			t.Errorf("double answer outside the overlap %s - %s: %v", bothFrom.Format("15:04:05.000"), bothTo.Format("15:04:05.000"), d)
		}
	}
	// IPv4 doubles come from arpwatch.DoubleAnswerList; the windowing
	// the IPv6 watch uses must find the same.
	if ours := doubles(rec.Probes); len(ours) != len(rec.Doubles) {
		t.Errorf("doubles by the probes' windows: %d, recorded: %d", len(ours), len(rec.Doubles))
	}
}

func mustVIP(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func owner(w *VIPWatch, mac string) error {
	if got := w.Current(); got != mac {
		return fmt.Errorf("latest answer from %q, want %s", got, mac)
	}
	return nil
}

// addVIP puts the VIP on the node's eth0: its kernel answers ARP or NDP
// for it (nodad: at once).
func addVIP(n *CPNode, vip netip.Addr) error {
	args := []string{"-n", n.Host.Netns, "addr", "add", netip.PrefixFrom(vip, vip.BitLen()).String(), "dev", "eth0"}
	if vip.Is6() {
		args = append(args, "nodad")
	}
	return run("ip", args...)
}

func delVIP(n *CPNode, vip netip.Addr) error {
	return run("ip", "-n", n.Host.Netns, "addr", "del", netip.PrefixFrom(vip, vip.BitLen()).String(), "dev", "eth0")
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// checkNothingLeft checks that Down removed the namespaces, the processes
// and the work directory.
func checkNothingLeft(t *testing.T, dir string, pids map[int]bool) {
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), Prefix) {
			t.Errorf("netns %s left", e.Name())
		}
	}
	for pid := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			t.Errorf("pid %d of a node's namespace still runs", pid)
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if strings.Contains(string(cmdline), dir) {
			t.Errorf("process %s left: %s", p.Name(), strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("work directory %s left", dir)
	}
}
