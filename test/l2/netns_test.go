package l2

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The test LAN. Everything the harness creates is named with prefix, and
// every address is in 198.18.0.0/24 (part of the benchmarking range
// 198.18.0.0/15): nothing is ever sent anywhere else.
const (
	prefix = "hl2-"

	lanNS    = prefix + "lan"    // holds the bridge
	bridge   = "br0"             // in lanNS
	rootVeth = prefix + "root"   // root-namespace end of the apiserver's veth
	rootPort = "root"            // its bridge port in lanNS
	clientNS = prefix + "client" // the ARP client
	devName  = "eth0"            // the device of every node and the client

	prefixLen = 24
	poolCIDR  = "198.18.0.192/27"
)

var (
	// rootIP is the root namespace's address on the LAN: kube-apiserver
	// binds to it, so the agents reach it from their namespaces.
	rootIP  = netip.MustParseAddr("198.18.0.1")
	rootMAC = mustMAC("02:48:4c:32:00:01")

	clientIP  = netip.MustParseAddr("198.18.0.100")
	clientMAC = mustMAC("02:48:4c:32:00:64")
)

func mustMAC(s string) net.HardwareAddr {
	mac, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return mac
}

// run runs a command; its output is in the error.
func runCmd(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func ip(args ...string) error { return runCmd("ip", args...) }

// lanHost is one namespace plugged into the bridge with eth0.
type lanHost struct {
	ns   string
	port string // the bridge port (veth peer) in lanNS
	ip   netip.Addr
	mac  net.HardwareAddr
}

// setupLAN builds the network: the bridge, the root namespace's veth and
// one namespace per host. On error, what was built is left for teardownLAN.
func setupLAN(hosts []lanHost) error {
	if err := ip("netns", "add", lanNS); err != nil {
		return err
	}
	if err := disableIPv6(lanNS); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"-n", lanNS, "link", "set", "lo", "up"},
		{"-n", lanNS, "link", "add", bridge, "type", "bridge"},
		{"-n", lanNS, "link", "set", bridge, "up"},
		// The root namespace's end: created there, its peer moved into the
		// LAN namespace at once. Only this new device is configured.
		{"link", "add", rootVeth, "address", rootMAC.String(), "type", "veth", "peer", "name", rootPort, "netns", lanNS},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	// No IPv6 (no DAD, no router solicitations) on our root-side device.
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+rootVeth+"/disable_ipv6", []byte("1"), 0o644); err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, args := range [][]string{
		{"addr", "add", fmt.Sprintf("%s/%d", rootIP, prefixLen), "dev", rootVeth},
		{"link", "set", rootVeth, "up"},
		{"-n", lanNS, "link", "set", rootPort, "master", bridge},
		{"-n", lanNS, "link", "set", rootPort, "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	for _, h := range hosts {
		if err := ip("netns", "add", h.ns); err != nil {
			return err
		}
		if err := disableIPv6(h.ns); err != nil {
			return err
		}
		for _, args := range [][]string{
			{"-n", h.ns, "link", "set", "lo", "up"},
			{"-n", lanNS, "link", "add", h.port, "type", "veth", "peer", "name", devName, "netns", h.ns},
			{"-n", h.ns, "link", "set", devName, "address", h.mac.String()},
			{"-n", h.ns, "addr", "add", fmt.Sprintf("%s/%d", h.ip, prefixLen), "dev", devName},
			{"-n", h.ns, "link", "set", devName, "up"},
			{"-n", lanNS, "link", "set", h.port, "master", bridge},
			{"-n", lanNS, "link", "set", h.port, "up"},
		} {
			if err := ip(args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// disableIPv6 turns IPv6 off in a namespace we created, for devices created
// afterwards too: the tests are IPv4/ARP only and the LAN stays quiet.
func disableIPv6(ns string) error {
	err := runCmd("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
		"net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	if err != nil && strings.Contains(err.Error(), "No such file") {
		return nil // no IPv6 in this kernel
	}
	return err
}

// teardownLAN removes the root veth and every hl2- namespace. The devices
// in a namespace go with it (once no process is left in it).
func teardownLAN() []error {
	var errs []error
	if _, err := net.InterfaceByName(rootVeth); err == nil {
		if err := ip("link", "del", rootVeth); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ns := range ourNetns() {
		if err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// ourNetns lists the named network namespaces with our prefix.
func ourNetns() []string {
	entries, _ := os.ReadDir("/var/run/netns")
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// inNetns runs fn on an OS thread switched into the named network
// namespace; sockets fn creates belong to that namespace for good. The
// thread is switched back before it is released; if that fails it stays
// locked, and Go discards it when the goroutine ends.
func inNetns(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("current netns: %w", err)
			return
		}
		defer orig.Close()
		target, err := netns.GetFromName(name)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns %s: %w", name, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering netns %s: %w", name, err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("leaving netns %s: %w", name, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// ---------------------------------------------------------------------------
// bpffs mounts
// ---------------------------------------------------------------------------

// mountBPFFS mounts a fresh bpffs on dir, in the root mount namespace. The
// agents' `ip netns exec` mount namespaces are copies taken after this, so
// an agent given --bpf-root dir pins its maps where the test reads them.
func mountBPFFS(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("bpf", dir, "bpf", 0, ""); err != nil {
		return fmt.Errorf("mounting bpffs on %s: %w", dir, err)
	}
	if !isBPFFS(dir) {
		return fmt.Errorf("%s is not on bpffs after mounting it", dir)
	}
	return nil
}

// mountsUnder returns the mount points at or below dir in our mount
// namespace, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountAll detaches every mount at or below dir.
func unmountAll(dir string) []error {
	var errs []error
	for _, mp := range mountsUnder(dir) {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	return errs
}

// isBPFFS reports whether path is on a bpf filesystem.
func isBPFFS(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && uint32(st.Type) == unix.BPF_FS_MAGIC
}

// ---------------------------------------------------------------------------
// Leftovers of an earlier run that could not clean up (killed, timed out)
// ---------------------------------------------------------------------------

// leftoverWorkDirs lists the work directories of earlier runs: directories
// named as os.MkdirTemp("", prefix) names them (hl2-<digits>).
func leftoverWorkDirs() []string {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	var out []string
	for _, m := range matches {
		suffix := strings.TrimPrefix(filepath.Base(m), prefix)
		if _, err := strconv.ParseUint(suffix, 10, 64); err != nil {
			continue
		}
		if fi, err := os.Lstat(m); err == nil && fi.IsDir() {
			out = append(out, m)
		}
	}
	return out
}

// cleanupLeftovers removes what an earlier run of this suite left behind:
// its agents (identified by their executable, which lives in the run's work
// directory), its control plane (recorded in the work directory), the root
// veth, the hl2- namespaces, mounts under the work directories and the
// directories themselves.
func cleanupLeftovers() {
	dirs := leftoverWorkDirs()
	killLeftoverAgents(dirs)
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, clusterDirFile)); err == nil {
			stopLeftoverCluster(strings.TrimSpace(string(b)))
		}
	}
	for _, err := range teardownLAN() {
		fmt.Fprintln(os.Stderr, "l2: cleaning up leftovers:", err)
	}
	for _, d := range dirs {
		for _, err := range unmountAll(d) {
			fmt.Fprintln(os.Stderr, "l2: cleaning up leftovers:", err)
		}
		fmt.Fprintln(os.Stderr, "l2: removing leftover", d)
		_ = os.RemoveAll(d)
	}
}

// killLeftoverAgents SIGKILLs processes whose executable is the
// herald-agent of one of dirs (a leftover run's work directory).
func killLeftoverAgents(dirs []string) {
	if len(dirs) == 0 {
		return
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
		if err != nil {
			continue
		}
		exe = strings.TrimSuffix(exe, " (deleted)")
		for _, d := range dirs {
			if exe == filepath.Join(d, "bin", "herald-agent") {
				fmt.Fprintf(os.Stderr, "l2: killing leftover agent pid %d (%s)\n", pid, exe)
				_ = syscall.Kill(pid, syscall.SIGKILL)
				waitGone(pid)
			}
		}
	}
}

func waitGone(pid int) {
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
