package bgp

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
)

// BFD at 100 ms × 3 both ways: a 300 ms detection time.
const (
	bfdProfile    = "hbgp-fast"
	bfdIntervalMs = 100
	bfdMult       = 3
)

// bfdProfileConfig is bfdd's configuration: the profile the neighbors
// use once enableBFD turns BFD on.
var bfdProfileConfig = fmt.Sprintf("bfd\n profile %s\n  receive-interval %d\n  transmit-interval %d\n  detect-multiplier %d\n exit\nexit\n",
	bfdProfile, bfdIntervalMs, bfdIntervalMs, bfdMult)

// sessionAddrs are every node's session addresses, IPv4 and IPv6.
func sessionAddrs() []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.host.IP.String(), n.host.IP6.String())
	}
	return out
}

// setBFD turns BFD on or off on both sides: spec.bfd of the shared peer
// configs, and `neighbor ... bfd profile` in FRR. Turned on, it waits
// until every session is up on both sides.
func setBFD(tb testing.TB, on bool) {
	tb.Helper()
	var bfd *v2alpha1.CiliumBGPBFD
	if on {
		bfd = &v2alpha1.CiliumBGPBFD{ReceiveIntervalMilliseconds: ptr.To[int32](bfdIntervalMs),
			TransmitIntervalMilliseconds: ptr.To[int32](bfdIntervalMs), DetectMultiplier: ptr.To[int32](bfdMult)}
	}
	setPeerConfigsBFD(tb, bfd)
	if on {
		waitBFDUp(tb)
	}
}

// setPeerConfigsBFD sets spec.bfd of the shared peer configs, and turns
// FRR's BFD with every node's addresses on (the profile) or off.
func setPeerConfigsBFD(tb testing.TB, bfd *v2alpha1.CiliumBGPBFD) {
	tb.Helper()
	ctx := context.Background()
	for _, name := range []string{peerConfigV4, peerConfigV6} {
		pc, err := herald.CiliumV2alpha1().CiliumBGPPeerConfigs().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		pc.Spec.BFD = bfd
		if _, err := herald.CiliumV2alpha1().CiliumBGPPeerConfigs().Update(ctx, pc, metav1.UpdateOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	lines := []string{fmt.Sprintf("router bgp %d", routerASN)}
	for _, a := range sessionAddrs() {
		if bfd != nil {
			lines = append(lines, fmt.Sprintf("neighbor %s bfd profile %s", a, bfdProfile))
		} else {
			lines = append(lines, fmt.Sprintf("no neighbor %s bfd", a))
		}
	}
	if err := router.Configure(lines...); err != nil {
		tb.Fatal(err)
	}
}

// waitBFDUp waits until FRR has every node's sessions up at the
// profile's timers and every agent shows its BFD sessions up.
func waitBFDUp(tb testing.TB) {
	tb.Helper()
	waitFor(tb, "BFD sessions up in FRR and in the agents", func() (bool, string) {
		peers, err := router.BFDPeers()
		if err != nil {
			return false, err.Error()
		}
		for _, a := range sessionAddrs() {
			p := peers[a]
			if p.Status != "up" || p.RemoteReceiveInterval != bfdIntervalMs || p.RemoteDetectMultiplier != bfdMult {
				return false, fmt.Sprintf("FRR's session with %s: %+v", a, p)
			}
		}
		for _, n := range nodes {
			if ok, msg := agentBFDUp(n); !ok {
				return false, msg
			}
		}
		return true, ""
	})
}

// agentBFDUp: the node's bgp-bfd rows are up, and bgp-peers shows it.
func agentBFDUp(n *node) (bool, string) {
	sessions, err := tableOf[tables.BGPBFDSession](n, tables.BGPBFDSessionsTableName)
	if err != nil {
		return false, err.Error()
	}
	if len(sessions) != 2 {
		return false, fmt.Sprintf("%s has %d BFD sessions: %+v", n.Name, len(sessions), sessions)
	}
	for _, s := range sessions {
		if s.State != tables.BFDStateUp || s.DetectTime != bfdMult*bfdIntervalMs*time.Millisecond {
			return false, fmt.Sprintf("%s: %+v", n.Name, s)
		}
	}
	peers, err := tableOf[tables.BGPPeerState](n, tables.BGPPeersTableName)
	if err != nil {
		return false, err.Error()
	}
	for _, p := range peers {
		if p.BFD != tables.BFDStateUp {
			return false, fmt.Sprintf("%s: bgp-peers %+v", n.Name, p)
		}
	}
	return true, ""
}

// A node that stops answering (here its agent frozen with SIGSTOP: no
// FIN, the TCP session stays open) loses its paths at the router as soon
// as BFD's detection time expires, although graceful restart is on: FRR
// ends a session whose BFD failed with a NOTIFICATION (Cease, "BFD
// Down") and keeps nothing stale, where without BFD it would wait for the
// hold time. Back, the node has BFD up and its paths again. An agent
// killed with -9, on the other hand, closes its TCP sessions at once: the
// router keeps its paths, stale, for graceful restart, BFD or not.
func TestBFDFailover(t *testing.T) {
	ensureAgents(t)
	setBFD(t, true)
	t.Cleanup(func() { ensureAgents(t); setBFD(t, false) })
	_, p := advertisedService(t, "web")
	victim := nodes[0]

	t.Run("frozen", func(t *testing.T) {
		if err := victim.Freeze(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = victim.Thaw() })
		waitAdvertisedBy(t, p, nodes[1:]...)
		waitKernelECMP(t, p, nodes[1:]...)
		checkBFDReset(t, victim)
		if err := victim.Thaw(); err != nil {
			t.Fatal(err)
		}
		waitBFDUp(t)
		waitAdvertisedBy(t, p, nodes...)
	})
	t.Run("kill -9 keeps graceful restart", func(t *testing.T) {
		restartKeepsRoutes(t, p, victim, func(n *node) error { return n.Kill9() })
		waitBFDUp(t)
	})
}

// checkBFDReset: FRR's BFD session with the node expired, and its BGP
// session ended because of it.
func checkBFDReset(t *testing.T, victim *node) {
	t.Helper()
	bfdPeers, err := router.BFDPeers()
	if err != nil {
		t.Fatal(err)
	}
	if s := bfdPeers[victim.host.IP.String()]; s.Status == "up" || s.Diagnostic != "control detection time expired" {
		t.Fatalf("FRR's BFD session with %s: %+v", victim.Name, s)
	}
	neighbors, err := router.Neighbors()
	if err != nil {
		t.Fatal(err)
	}
	n := neighbors[victim.host.IP.String()]
	if n.State == "Established" || !strings.Contains(n.LastReset+" "+n.LastNotification, "BFD") {
		t.Fatalf("FRR's BGP session with %s: %s, last reset %q, last notification %q", victim.Name, n.State, n.LastReset, n.LastNotification)
	}
}

// When the node's BFD session with the router fails (here: the router's
// BFD packets to node1 are dropped, BGP still flows), the agent resets
// that BGP session at once, and says why; once the packets flow again,
// BFD and the node's path are back.
func TestBFDFailureResetsSession(t *testing.T) {
	ensureAgents(t)
	setBFD(t, true)
	t.Cleanup(func() { setBFD(t, false) })
	_, p := advertisedService(t, "web")
	victim := nodes[0]
	mark := victim.Mark()
	drop := fmt.Sprintf("add table inet hbgpbfd; add chain inet hbgpbfd out { type filter hook output priority 0; }; "+
		"add rule inet hbgpbfd out ip daddr %s udp dport 3784 drop", victim.host.IP)
	if out, err := exec.Command("ip", "netns", "exec", routerHost.Netns, "nft", drop).CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
	undrop := func() {
		_ = exec.Command("ip", "netns", "exec", routerHost.Netns, "nft", "delete table inet hbgpbfd").Run()
	}
	t.Cleanup(undrop)

	waitFor(t, "node1 to reset its BGP session on BFD failure", func() (bool, string) {
		logs := victim.LogsSince(mark)
		return strings.Contains(logs, "Resetting BGP session: its BFD session went down") &&
			strings.Contains(logs, routerHost.IP.String()), agentproc.Tail(logs, 10)
	})
	sessions, err := tableOf[tables.BGPBFDSession](victim, tables.BGPBFDSessionsTableName)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		if s.Peer == routerHost.IP && (s.Failures == 0 || s.Diagnostic != "control detection time expired") {
			t.Fatalf("node1's BFD session with the router: %+v", s)
		}
	}
	undrop()
	waitBFDUp(t)
	waitAdvertisedBy(t, p, nodes...)
}

// A node whose CPUs are saturated keeps its BFD sessions: no session goes
// down on either side while busy loops compete with the agent on every
// CPU. (Short here; `make bench-bgp` runs it for minutes.)
func TestBFDNoFlapUnderCPUStress(t *testing.T) {
	ensureAgents(t)
	setBFD(t, true)
	t.Cleanup(func() { setBFD(t, false) })
	before := bfdDowns(t)
	stopHog := cpuHog(t, 4)
	time.Sleep(30 * time.Second)
	stopHog()
	if f := flaps(before, bfdDowns(t)); len(f) > 0 {
		t.Fatalf("BFD went down under CPU stress: %v", f)
	}
}

// bfdDowns counts, per session and side, the times BFD went down: FRR's
// session-down counters and the agents' failures.
func bfdDowns(tb testing.TB) map[string]uint64 {
	tb.Helper()
	counters, err := router.BFDCounters()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]uint64{}
	for _, a := range sessionAddrs() {
		out["FRR "+a] = uint64(counters[a].SessionDown)
	}
	for _, n := range nodes {
		sessions, err := tableOf[tables.BGPBFDSession](n, tables.BGPBFDSessionsTableName)
		if err != nil {
			tb.Fatal(err)
		}
		for _, s := range sessions {
			out[n.Name+" "+s.Peer.String()] = s.Failures
		}
	}
	return out
}

// flaps lists the sessions whose down count grew.
func flaps(before, after map[string]uint64) []string {
	var out []string
	for k, v := range after {
		if v != before[k] {
			out = append(out, fmt.Sprintf("%s: %d", k, v-before[k]))
		}
	}
	slices.Sort(out)
	return out
}

// cpuHog starts n busy loops (shell processes spinning, no priority
// change) and returns the function that kills them.
func cpuHog(tb testing.TB, n int) (stop func()) {
	tb.Helper()
	var cmds []*exec.Cmd
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	return func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
}

// tableOf reads an agent's table without failing the test (for polls).
func tableOf[T any](n *node, table string) ([]T, error) {
	return agentproc.Table[T](n.Agent, table)
}
