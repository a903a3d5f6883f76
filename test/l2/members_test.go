package l2

import (
	"strings"
	"testing"
	"time"
)

// useMembersElection restarts every agent with the members election
// (node liveness between the agents, owners placed by consistent hashing)
// for one test, and with the suite's flags again after it.
func useMembersElection(t *testing.T) {
	t.Helper()
	restart := func(args ...string) {
		for _, n := range nodes {
			if err := n.Stop(); err != nil {
				t.Fatal(err)
			}
			n.SetExtraArgs(args...)
			if err := n.Start(); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range nodes {
			if err := n.waitReady(); err != nil {
				t.Fatal(err)
			}
		}
	}
	restart("--l2-announcements-election=members")
	t.Cleanup(func() { restart() })
}

// With the members election: the owner is killed (kill -9), frozen
// (SIGSTOP) and comes back; another node takes over each time, the group
// returns to its placed owner by a handover, and no request is ever
// answered by two MACs.
func TestMembersFailoverAndHandover(t *testing.T) {
	useMembersElection(t)
	s := newScenario(t)
	s.createPolicy("all", nil)
	s.createService("web")
	vip := s.waitVIP("web")
	placed := s.waitOwner("web", vip)
	expectAnsweredOnlyBy(t, vip, placed)

	start := client.mark()
	prober := startMarkedProber(vip, 20*time.Millisecond)
	defer func() { _, _ = prober.stop() }()

	// kill -9: another node answers once the peers declare the owner dead.
	killedAt := time.Now()
	if err := placed.Kill9(); err != nil {
		t.Fatal(err)
	}
	interim := s.waitOwner("web", vip, placed)
	waitGratuitous(t, vip, interim, start)
	t.Logf("kill -9 of %s: %s holds the group after %s", placed.Name, interim.Name, time.Since(killedAt).Round(time.Millisecond))

	// Back up: placement gives the group back to it, by a handover.
	if err := placed.Start(); err != nil {
		t.Fatal(err)
	}
	if err := placed.waitReady(); err != nil {
		t.Fatal(err)
	}
	if back := s.waitOwner("web", vip, interim); back != placed {
		t.Fatalf("after %s came back the group went to %s, want its placed owner", placed.Name, back.Name)
	}
	t.Logf("%s came back and got the group from %s by a handover", placed.Name, interim.Name)

	// SIGSTOP: the frozen owner's program falls silent by itself before
	// the peers take over; thawed, it rejoins in a new term and gets the
	// group back only by a handover.
	frozenAt := time.Now()
	before := client.mark()
	if err := placed.Freeze(); err != nil {
		t.Fatal(err)
	}
	interim = s.waitOwner("web", vip, placed)
	waitGratuitous(t, vip, interim, before)
	t.Logf("SIGSTOP of %s: %s holds the group after %s", placed.Name, interim.Name, time.Since(frozenAt).Round(time.Millisecond))
	time.Sleep(time.Second)
	if err := placed.Thaw(); err != nil {
		t.Fatal(err)
	}
	if back := s.waitOwner("web", vip, interim); back != placed {
		t.Fatalf("after %s thawed the group went to %s, want its placed owner", placed.Name, back.Name)
	}

	marks, err := prober.stop()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(probeWindow)
	frames, err := client.since(start)
	if err != nil {
		t.Fatal(err)
	}
	expectAnsweredOnlyBy(t, vip, placed)
	windows, doubles := doubleAnswers(frames, vip, marks)
	if len(doubles) > 0 {
		t.Errorf("%d of %d requests answered by two MACs:\n  %s", len(doubles), windows, strings.Join(doubles, "\n  "))
	}
	t.Logf("%d requests, each answered by at most one MAC", windows)
}
