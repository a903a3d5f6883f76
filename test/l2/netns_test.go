package l2

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/netlab"
	"github.com/heraldlb/herald/test/suite"
)

// The test LAN (test/netlab). Everything the harness creates is named with
// prefix, and every address is in 198.18.0.0/24 (part of the benchmarking
// range 198.18.0.0/15) or fd00:18:0:1::/64 (unique local): nothing is ever
// sent anywhere else.
const (
	prefix  = "hl2-"
	devName = "eth0" // the device of every node and the client

	poolCIDR = "198.18.0.192/27"
	// poolCIDR6 is the pool's IPv6 block, on the LAN's IPv6 prefix (a
	// client solicits on-link addresses only).
	poolCIDR6 = "fd00:18:0:1::c0/123"

	// clientHostNum places the ARP client at 198.18.0.100, away from the
	// nodes (.11 upwards).
	clientHostNum = 100
	// rogueHostNum places the host that takes a VIP for itself (the
	// address conflict tests) at 198.18.0.150.
	rogueHostNum = 150
)

var (
	subnet  = netip.MustParsePrefix("198.18.0.0/24")
	subnet6 = netip.MustParsePrefix("fd00:18:0:1::/64")
	// macPrefix: every device on the LAN has the MAC address
	// 02:48:4c:32:00:<last byte of its IP>, so that a MAC in a capture
	// says who sent it.
	macPrefix = [5]byte{0x02, 0x48, 0x4c, 0x32, 0x00}
)

// checkPlan checks that the LAN has the addresses the package comment
// documents and the tests and benchmarks' reports use: the root namespace
// 198.18.0.1 (02:48:4c:32:00:01), nodeN 198.18.0.1N (02:48:4c:32:00:0b
// upwards), the client 198.18.0.100 (02:48:4c:32:00:64).
func checkPlan(lan *netlab.LAN, nodeNames []string) error {
	if got, want := lan.RootIP(), netip.MustParseAddr("198.18.0.1"); got != want {
		return fmt.Errorf("the root namespace has %s, want %s", got, want)
	}
	want := map[string]int{"client": clientHostNum}
	for i, name := range nodeNames {
		want[name] = 11 + i
	}
	for name, n := range want {
		h := lan.Host(name)
		if h == nil {
			return fmt.Errorf("no host %s on the LAN", name)
		}
		wantIP := netip.AddrFrom4([4]byte{198, 18, 0, byte(n)})
		wantMAC := fmt.Sprintf("02:48:4c:32:00:%02x", n)
		if h.IP != wantIP || h.MAC.String() != wantMAC {
			return fmt.Errorf("host %s has %s %s, want %s %s", name, h.IP, h.MAC, wantIP, wantMAC)
		}
	}
	return nil
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
	var bins []string
	for _, d := range dirs {
		bins = append(bins, filepath.Join(d, "bin", "herald-agent"))
	}
	agentproc.KillStrays(bins...)
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, clusterDirFile)); err == nil {
			suite.StopLeftoverCluster("l2", strings.TrimSpace(string(b)))
		}
	}
	for _, err := range netlab.Cleanup(prefix) {
		fmt.Fprintln(os.Stderr, "l2: cleaning up leftovers:", err)
	}
	for _, d := range dirs {
		for _, err := range agentproc.UnmountAll(d) {
			fmt.Fprintln(os.Stderr, "l2: cleaning up leftovers:", err)
		}
		fmt.Fprintln(os.Stderr, "l2: removing leftover", d)
		_ = os.RemoveAll(d)
	}
}
