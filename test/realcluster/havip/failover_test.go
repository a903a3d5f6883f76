package havip

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/cpvip"
	"github.com/heraldlb/herald/test/realcluster"
	"github.com/heraldlb/herald/test/suite"
)

// fault is one way the VIP's owner fails, and how it recovers.
type fault struct {
	name string
	do   func(n *realcluster.Node) error
	undo func(n *realcluster.Node) error
}

var faults = []fault{
	{"kill -9 of the owner's kube-apiserver",
		func(n *realcluster.Node) error { return cl.KillAPIServer(n) },
		func(n *realcluster.Node) error { return cl.StartAPIServer(n) }},
	{"kill -9 of the owner's agent",
		func(n *realcluster.Node) error { return killAgent(n) },
		// The kubelet restarts the static Pod's container, after at
		// most a second here (Options.MaxRestartPeriod in TestMain).
		func(*realcluster.Node) error { return nil }},
	{"freezing the owner's node (SIGSTOP of every process)",
		func(n *realcluster.Node) error { return n.Signal(syscall.SIGSTOP) },
		func(n *realcluster.Node) error { return n.Signal(syscall.SIGCONT) }},
	{"cutting the owner's link",
		func(n *realcluster.Node) error { return cl.Cut(n) },
		func(n *realcluster.Node) error { return cl.Heal(n) }},
}

// trials is how many times each fault is tried (HERALD_CPVIP_TRIALS, 3
// by default); a value that is no positive number fails the test.
func trials(t *testing.T) int { return suite.EnvInt(t, "HERALD_CPVIP_TRIALS", 3) }

func killAgent(n *realcluster.Node) error {
	pids := n.ProcessesWithArg("herald-agent", "control-plane-vip")
	if len(pids) != 1 {
		return fmt.Errorf("node %s: %d control-plane VIP agents", n.Name, len(pids))
	}
	return syscall.Kill(pids[0], syscall.SIGKILL)
}

// Every fault of the owner, trials times each: another node answers the
// VIP, no request is ever answered by two MACs, and `kubectl get nodes`
// through the VIP goes on. The figures it prints are the benchmark's.
func TestFailover(t *testing.T) {
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			var gaps, apiGaps []time.Duration
			for i := range trials(t) {
				gap, apiGap := failoverTrial(t, f, i)
				gaps, apiGaps = append(gaps, gap), append(apiGaps, apiGap)
				if t.Failed() {
					return
				}
			}
			t.Logf("%s, %d trials: failover p50 %s p99 %s (max %s); kubectl get nodes through the VIP: longest without an answer p50 %s max %s",
				f.name, len(gaps), quantile(gaps, 0.5), quantile(gaps, 0.99), slices.Max(gaps), quantile(apiGaps, 0.5), slices.Max(apiGaps))
		})
	}
}

// failoverTrial runs one fault on the current owner and returns the time
// until another node answered and the API loop's longest time without an
// answer.
func failoverTrial(t *testing.T, f fault, i int) (time.Duration, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w, owner := watchOwner(t, ctx, cpvip.WatchEvery)
	ownerMAC := w.Current()
	api, err := cpvip.StartAPILoop(ctx, cl.ClientHost.Netns, cl.Kubeconfig, cpvip.APIEvery, cpvip.APITimeout)
	if err != nil {
		w.Stop()
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	at := time.Now()
	if err := f.do(owner); err != nil {
		t.Fatal(err)
	}
	for time.Since(at) < 10*time.Second && (w.Current() == ownerMAC || w.Current() == "") {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // what follows the takeover: no double answers either
	rec := w.Stop()
	gap, ok := rec.Failover(at, ownerMAC)
	if ok {
		// Until the client is answered again, before the owner is
		// restored: a request a frozen owner's API server had taken waits
		// for the client's timeout.
		api.WaitAnswerSince(at.Add(gap), cpvip.APITimeout+2*time.Second)
	}
	apiRec := api.Stop()
	if err := f.undo(owner); err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("trial %d: nobody took over from %s within 10 s:\n%s", i, owner.Name, rec.Format(name))
	}
	if len(rec.Doubles) > 0 {
		t.Errorf("trial %d: %d requests answered by two MACs:\n%s", i, len(rec.Doubles), rec.Format(name))
	}
	t.Logf("trial %d: %s → %s in %s; kubectl get nodes: %d failed, longest without an answer %s",
		i, owner.Name, name(rec.OwnerAt(time.Now())), gap.Round(time.Millisecond), apiRec.Failed(), apiRec.LongestWithoutAnswer().Round(time.Millisecond))
	return gap, apiRec.LongestWithoutAnswer()
}

// watchOwner waits until the control plane is settled, then watches the
// VIP from the client host every interval and returns the watch and the
// node that answers it.
func watchOwner(t *testing.T, ctx context.Context, every time.Duration) (*cpvip.VIPWatch, *realcluster.Node) {
	t.Helper()
	waitSettled(t, ctx)
	w, err := cpvip.WatchVIPFrom(ctx, cl.ClientHost, realcluster.ControlPlaneVIP, every)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	owner := nodeByMAC(w.Current())
	if owner == nil {
		w.Stop()
		t.Fatalf("the VIP is answered by %q, no control-plane node", w.Current())
	}
	return w, owner
}

// waitSettled waits until every node's control-plane agent runs and every
// API server has been ready, checked every 200 ms, for settleSteady: the
// previous trial's node is back, and an API server that has just come back
// (its etcd member catching up after a freeze or a cut) no longer wobbles.
// A trial that started while one did would see the VIP move for that
// node's readiness, not for the trial's fault.
func waitSettled(t *testing.T, ctx context.Context) {
	t.Helper()
	var steadySince time.Time
	for {
		settled := true
		for _, n := range cl.ControlPlaneNodes() {
			if len(n.ProcessesWithArg("herald-agent", "control-plane-vip")) != 1 || !cl.APIServerReady(ctx, n) {
				settled = false
			}
		}
		switch {
		case !settled:
			steadySince = time.Time{}
		case steadySince.IsZero():
			steadySince = time.Now()
		case time.Since(steadySince) >= settleSteady:
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the control plane did not settle after the previous trial")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// settleSteady: how long every API server must stay ready before a trial;
// more than the agents' readyz-success-threshold (10 probes, 1 s), so a
// returning node is a candidate again too.
const settleSteady = 3 * time.Second

func nodeByMAC(mac string) *realcluster.Node {
	for _, n := range cl.ControlPlaneNodes() {
		if m, err := n.MAC(); err == nil && m.String() == mac {
			return n
		}
	}
	return nil
}

func name(mac string) string {
	if n := nodeByMAC(mac); n != nil {
		return n.Name
	}
	return mac
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s)) + 0.5)
	return s[min(max(i-1, 0), len(s)-1)].Round(time.Millisecond)
}

// A ready, not ready, ready again... API server on the owner, every
// 300 ms for a minute: the VIP moves at most once
// (Documentation/control-plane-vip.md, "Flapping API servers").
func TestNoFlapping(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w, owner := watchOwner(t, ctx, 20*time.Millisecond)
	fctx, fcancel := context.WithTimeout(ctx, time.Minute)
	defer fcancel()
	blocks, err := cpvip.FlapReadyz(fctx, owner.Netns, 300*time.Millisecond)
	rec := w.Stop()
	if err != nil {
		t.Fatal(err)
	}
	var owners []string
	for _, s := range rec.AnsweredBy() {
		if s.Answer != "" && (len(owners) == 0 || owners[len(owners)-1] != s.Answer) {
			owners = append(owners, s.Answer)
		}
	}
	if len(rec.Doubles) > 0 {
		t.Errorf("%d requests answered by two MACs", len(rec.Doubles))
	}
	if moves := len(owners) - 1; moves > 1 {
		t.Fatalf("/readyz of %s blocked %d times in a minute: the VIP moved %d times, want at most 1:\n%s", owner.Name, blocks, moves, rec.Format(name))
	}
	t.Logf("/readyz of %s blocked %d times in a minute: the VIP moved %d time(s), longest unanswered %s", owner.Name, blocks, len(owners)-1, rec.LongestSilence().Round(time.Millisecond))
}

func macOf(n *realcluster.Node) string {
	m, err := n.MAC()
	if err != nil {
		return ""
	}
	return m.String()
}
