package frr

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldlb/herald/test/netlab"
	"github.com/heraldlb/herald/test/suite"
)

// The tests' LAN: its own prefix and subnets, so that they run next to the
// other suites (netlab refuses a subnet another LAN has up).
const prefix = "hfrr-"

var (
	subnet  = netip.MustParsePrefix("198.18.36.0/24")
	subnet6 = netip.MustParsePrefix("fd00:18:0:36::/64")
)

// rootOK, when set, says why the tests that need namespaces and FRR
// cannot run here: they fail with it. The parser tests run anyway.
var rootOK string

func TestMain(m *testing.M) {
	switch {
	case os.Geteuid() != 0:
		rootOK = "needs root (network namespaces)"
	default:
		for _, bin := range []string{filepath.Join(DaemonDir, "zebra"), filepath.Join(DaemonDir, "bgpd"), VtyshPath} {
			if _, err := os.Stat(bin); err != nil {
				fmt.Fprintf(os.Stderr, "frr: %s is missing: run install/dev/ensure-tools.sh (Debian's frr package)\n", bin)
				os.Exit(1)
			}
		}
		if _, err := exec.LookPath("ip"); err != nil {
			fmt.Fprintln(os.Stderr, "frr: ip is missing (iproute2)")
			os.Exit(1)
		}
	}
	if rootOK != "" {
		os.Exit(m.Run())
	}
	// One run at a time on a machine: the LAN's names are fixed, and a run
	// removes what another left behind.
	unlock, err := netlab.Lock("frr")
	if err != nil {
		fmt.Fprintln(os.Stderr, "frr:", err)
		os.Exit(1)
	}
	cleanupLeftovers()
	// On SIGINT/SIGTERM too: the tests' own cleanups do not run then (the
	// daemons die with the test binary anyway, Pdeathsig).
	td := suite.NewTeardown("frr")
	td.Add(cleanupLeftovers)
	code := m.Run()
	td.Run()
	unlock()
	os.Exit(code)
}

// cleanupLeftovers kills FRR daemons still running in the LAN's
// namespaces (an interrupted run) and removes the namespaces.
func cleanupLeftovers() {
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			KillInNetns(e.Name())
		}
	}
	for _, err := range netlab.Cleanup(prefix) {
		fmt.Fprintln(os.Stderr, "frr:", err)
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if rootOK != "" {
		t.Fatal(rootOK)
	}
}

// newLAN builds a LAN of the named hosts (198.18.36.11 upwards,
// fd00:18:0:36::b upwards), removed when the test ends, after the routers
// in it (cleanups run last first: call newLAN before starting routers).
func newLAN(t *testing.T, hosts ...string) *netlab.LAN {
	t.Helper()
	lan, err := netlab.New(prefix, subnet)
	if err != nil {
		t.Fatal(err)
	}
	if err := lan.EnableIPv6(subnet6); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, h := range hosts {
			if host := lan.Host(h); host != nil {
				KillInNetns(host.Netns)
			}
		}
		for _, err := range lan.Teardown() {
			t.Error(err)
		}
	})
	if err := lan.Setup(hosts...); err != nil {
		t.Fatal(err)
	}
	return lan
}
