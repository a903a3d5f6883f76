package l2

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/bpf"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
)

// TestMembersFreezeAfterConfirmation (members election, three nodes)
// freezes the owner's agent (SIGSTOP) right after a peer confirmed it: the
// moment its responder's deadline moved forward, the furthest it ever
// reaches. The other two declare it dead and one takes over; the owner is
// thawed (SIGCONT) after that, rejoins in a new term and holds nothing.
// Throughout all rounds, at most one MAC answers any request.
func TestMembersFreezeAfterConfirmation(t *testing.T) {
	s := newScenario(t)
	s.createPolicy("all", nil)
	s.createService("web")
	vip := s.waitVIP("web")
	// A round that fails leaves no agent frozen for the next tests.
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = n.Thaw()
		}
	})

	start := client.Mark()
	prober := client.StartMarkedProber(vip, 20*time.Millisecond)
	defer func() { _, _ = prober.Stop() }()
	for round := 1; round <= freezeRounds; round++ {
		waitMembersAlive(t, nodes)
		old := s.waitOwner("web", vip)
		before := client.Mark()
		ahead := freezeWhenDeadlineMoves(t, old)
		owner := s.waitOwner("web", vip, old)
		waitGratuitous(t, vip, owner, before)
		must(t, old.Thaw())
		waitWithdrawn(t, old, vip)
		t.Logf("round %d: froze %s %s before its deadline, right after a confirmation; %s took over, %s withdrew on thaw",
			round, old.Name, ahead.Round(time.Millisecond), owner.Name, old.Name)
	}
	// The thawed agents' late messages have had time to land.
	waitMembersAlive(t, nodes)
	expectNoDoubleAnswers(t, vip, prober, start)
}

// TestMembersFreezeAfterNodeLeaseRenewal (members election, two nodes that
// cannot reach each other on the peer port, so that each node's witness
// record herald-l2-witness-<node> is its only fence) freezes the owner's
// agent right after the answer to one of its witness renewals arrived,
// before the agent read it. The other node takes the group over once the
// frozen node's witness record expired; the owner is thawed after that.
// The late answer must not count as fresh: the renewal counts from when
// it was sent.
// Throughout all rounds, at most one MAC answers any request.
func TestMembersFreezeAfterNodeLeaseRenewal(t *testing.T) {
	s := newScenario(t)
	pair, third := nodes[:2], nodes[2]
	must(t, third.Stop())
	stopped := time.Now()
	t.Cleanup(func() { ensureAgents(t) })
	traps := map[*node]*renewalTrap{}
	for _, n := range pair {
		traps[n] = trapRenewals(t, n, tables.L2WitnessLeasePrefix+n.Name)
	}
	for _, n := range pair {
		must(t, n.waitReady())
	}
	// The group is placed while the two see each other: cut off, neither
	// may move anything, each keeps what it holds while it renews its
	// witness record, and takes the other's groups once that one's
	// expired.
	s.createPolicy("pair", nil)
	s.createService("web")
	vip := s.waitVIP("web")
	s.waitOwner("web", vip)
	// Until the third node's Lease expired, the two count it: they
	// would be two of three, and cut off from each other, neither a
	// majority.
	time.Sleep(time.Until(stopped.Add(leaseDuration + time.Second)))
	dropIPTraffic(t, pair[0], "hl2peers", pair[1].host.IP.String())
	waitMembersDead(t, pair[0], pair[1])
	waitMembersDead(t, pair[1], pair[0])

	start := client.Mark()
	prober := client.StartMarkedProber(vip, 20*time.Millisecond)
	defer func() { _, _ = prober.Stop() }()
	for round := 1; round <= freezeRounds; round++ {
		old := s.waitOwner("web", vip)
		trap := traps[old]
		before := client.Mark()
		trap.freezeAtNextRenewal(t, round)
		owner := s.waitOwner("web", vip, old)
		waitGratuitous(t, vip, owner, before)
		must(t, old.Thaw())
		waitWithdrawn(t, old, vip)
		t.Logf("round %d: froze %s after a renewal of its node Lease; %s took over, %s withdrew on thaw", round, old.Name, owner.Name, old.Name)
	}
	expectNoDoubleAnswers(t, vip, prober, start)
}

// freezeWhenDeadlineMoves watches n's responder deadline (the program's
// config map: heartbeat and max age) and freezes the agent as soon as the
// deadline moves forward, i.e. right after the elector took in a peer's
// confirmation. It returns how far ahead the deadline was at the freeze.
func freezeWhenDeadlineMoves(t testing.TB, n *node) time.Duration {
	t.Helper()
	root, err := n.BPFFS()
	if err != nil {
		t.Fatal(err)
	}
	m, err := ebpf.LoadPinnedMap(filepath.Join(root, "herald", bpf.MapConfig), &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	defer m.Close()
	var cfg struct{ HeartbeatNs, MaxAgeNs uint64 }
	deadline := func() uint64 {
		if err := m.Lookup(uint32(0), &cfg); err != nil {
			t.Fatalf("%s: reading the responder's deadline: %v", n.Name, err)
		}
		return cfg.HeartbeatNs + cfg.MaxAgeNs
	}
	last := deadline()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
		// A rewrite of the same deadline moves it by nanoseconds.
		if d := deadline(); d > last+uint64(time.Millisecond) {
			must(t, n.Freeze())
			var now unix.Timespec
			if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
				t.Fatal(err)
			}
			return time.Duration(int64(d) - now.Nano())
		}
	}
	t.Fatalf("%s: its responder's deadline did not move for 10s", n.Name)
	return 0
}

// waitMembersAlive waits until each of ns lists every one of ns as a live
// member.
func waitMembersAlive(t testing.TB, ns []*node) {
	t.Helper()
	waitFor(t, func() (bool, string) {
		for _, n := range ns {
			rows, err := agentproc.Table[*tables.L2Member](n.Agent, tables.L2MembersTableName)
			if err != nil {
				return false, err.Error()
			}
			live := map[string]bool{}
			for _, r := range rows {
				live[r.Node] = r.Live()
			}
			for _, o := range ns {
				if !live[o.Name] {
					return false, fmt.Sprintf("%s does not see %s alive: %v", n.Name, o.Name, rows)
				}
			}
		}
		return true, ""
	})
}

// waitMembersDead waits until n no longer lists other as a live member.
func waitMembersDead(t testing.TB, n, other *node) {
	t.Helper()
	waitFor(t, func() (bool, string) {
		rows, err := agentproc.Table[*tables.L2Member](n.Agent, tables.L2MembersTableName)
		if err != nil {
			return false, err.Error()
		}
		for _, r := range rows {
			if r.Node == other.Name && r.Live() {
				return false, fmt.Sprintf("%s still sees %s alive", n.Name, other.Name)
			}
		}
		return true, ""
	})
}

// dropIPTraffic drops n's IP traffic to and from the addresses (in n's namespace,
// in an nftables table of that name) until the test ends; ARP, which is not
// IP, still flows.
func dropIPTraffic(t testing.TB, n *node, table string, addrs ...string) (heal func()) {
	t.Helper()
	set := strings.Join(addrs, ", ")
	rules := fmt.Sprintf(`table inet %s {
	chain input { type filter hook input priority -10; policy accept; ip saddr { %s } drop; }
	chain output { type filter hook output priority -10; policy accept; ip daddr { %s } drop; }
}
`, table, set, set)
	cmd := exec.Command("ip", "netns", "exec", n.host.Netns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cutting %s off from %s: %v: %s", n.Name, set, err, out)
	}
	healed := false
	heal = func() {
		if healed {
			return
		}
		healed = true
		if out, err := exec.Command("ip", "netns", "exec", n.host.Netns, "nft", "delete", "table", "inet", table).CombinedOutput(); err != nil {
			t.Errorf("healing %s: %v: %s", n.Name, err, out)
		}
	}
	t.Cleanup(heal)
	return heal
}
