package l2

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/agentproc"
)

// TestAPIServerKilled: the API server is killed (its connections refused,
// not hanging as in TestMembersAPIServerOutage) for longer than any Lease
// the agents know of, with each election, as l2-announcements.md says:
//   - members election (the default): nothing moves between live nodes;
//     the owner answers every request throughout, alone.
//   - Lease election: the owner stops answering at its renew deadline
//     (and says so in its log); nobody else answers meanwhile; once the
//     API server is back, one node answers again (the holder, or another
//     node whose takeover was written first), never two at once.
//     herald-dbg explain on the silent holder says it does not answer,
//     and why it cannot tell who does.
func TestAPIServerKilled(t *testing.T) {
	t.Run("members", func(t *testing.T) {
		s := newScenario(t)
		s.createPolicy("all", nil)
		s.createService("web")
		vip := s.waitVIP("web")
		owner := s.waitOwner("web", vip)
		expectAnsweredOnlyBy(t, vip, owner)
		restart := killAPIServer(t)
		want := owner.host.MAC.String()
		requests := 0
		for end := time.Now().Add(3 * leaseDuration); time.Now().Before(end); requests++ {
			if res := probe(t, vip); len(res.Replies) != 1 || res.MACs()[0] != want {
				t.Fatalf("request %d without the API server: want one reply, from %s; %s", requests+1, owner, res)
			}
		}
		t.Logf("%d requests without the API server, each answered by %s alone", requests, owner.Name)
		restart()
		expectAnsweredOnlyBy(t, vip, owner)
	})
	t.Run("lease", func(t *testing.T) {
		useLeaseElection(t)
		s := newScenario(t)
		s.createPolicy("all", nil)
		s.createService("web")
		vip := s.waitVIP("web")
		owner := s.waitOwner("web", vip)
		expectAnsweredOnlyBy(t, vip, owner)
		logs, start := owner.Mark(), client.Mark()
		restart := killAPIServer(t)
		expectSilent(t, vip)
		time.Sleep(3 * leaseDuration)
		assertNeverSpokeFor(t, vip, start, -1, others(owner)...)
		const line = `msg="Not answering until the announcement lease is renewed: its last renewal ran out"`
		if l := owner.LogsSince(logs); !strings.Contains(l, line) {
			t.Errorf("%s went silent without logging %s:\n%s", owner.Name, line, agentproc.Tail(l, 30))
		}
		// herald-dbg on the silent holder cannot read the Lease either,
		// and says so.
		out, err := owner.Dbg("--kubeconfig", testCluster.Kubeconfig, "explain", "service", s.ns+"/web")
		if err != nil || !strings.Contains(string(out), "not by this node ("+owner.Name+") now") || !strings.Contains(string(out), "cannot be read: ") ||
			!strings.Contains(string(out), "connection refused") {
			t.Errorf("herald-dbg explain on %s without the API server (err %v):\n%s", owner.Name, err, out)
		}
		back := client.Mark()
		prober := client.StartMarkedProber(vip, 20*time.Millisecond)
		t.Cleanup(func() { _, _ = prober.Stop() })
		restart()
		// The holder's renewal and another node's takeover race; the
		// first write wins, the other fails on the Lease's version.
		now := s.waitOwner("web", vip)
		time.Sleep(time.Second) // keep asking a little longer
		expectNoDoubleAnswers(t, vip, prober, back)
		expectAnsweredOnlyBy(t, vip, now)
		t.Logf("after the outage %s answers for %s (before it: %s)", now.Name, vip, owner.Name)
	})
}

// killAPIServer kills the API server and returns how to start it again;
// a test that fails before it does starts it in its cleanup.
func killAPIServer(t *testing.T) (restart func()) {
	t.Helper()
	argv, err := testCluster.KillAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver killed")
	started := false
	restart = func() {
		if started {
			return
		}
		started = true
		if err := testCluster.StartAPIServer(argv); err != nil {
			t.Fatal(err)
		}
		t.Logf("kube-apiserver ready again")
	}
	t.Cleanup(restart)
	return restart
}
