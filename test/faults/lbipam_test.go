package faults

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/lbwatch"
)

// services is how many Services exist before the faults start; the churn
// adds and removes more meanwhile.
const services = 1000

// TestAllocatorFaultsUnderChurn freezes, kills and partitions the agent
// that allocates while Services are created and deleted, and checks on
// every change of every Service that no address is on two Services and no
// Service's address changes (issue: a frozen-then-resumed allocator wrote
// stale allocations, 325 duplicates in three freezes).
func TestAllocatorFaultsUnderChurn(t *testing.T) {
	logAgentsOnFailure(t)
	ns := namespace(t, "churn")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := lbwatch.Start(ctx, kube, ns)
	if err != nil {
		t.Fatal(err)
	}
	createServices(t, ns, "svc", services)
	waitAllHaveIPs(t, w, ns)
	t.Logf("%d Services have addresses: %s", services, w.Summary())

	c := startChurn(ns)
	defer func() {
		if c != nil {
			c.halt()
		}
	}()

	// A pause shorter than the renew deadline: nothing happens. One
	// between the renew deadline and the lease duration: the leader's
	// writes lapse, nobody takes over, and the same term resumes. One much
	// longer than the lease duration, three times: another agent takes
	// over, and the frozen one wakes up believing it still leads.
	for _, pause := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, 20 * time.Second, 20 * time.Second, 20 * time.Second} {
		l := leader(t)
		t.Logf("freezing %s (pid %d) for %s; churn so far: %s", l.Name, l.PID(), pause, c)
		if err := l.Freeze(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pause)
		if err := l.Thaw(); err != nil {
			t.Fatal(err)
		}
		settle(t, w, ns)
	}

	for range 3 {
		l := leader(t)
		t.Logf("killing %s (pid %d) with SIGKILL; churn so far: %s", l.Name, l.PID(), c)
		if err := l.Kill9(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if err := l.Start(); err != nil {
			t.Fatal(err)
		}
		settle(t, w, ns)
	}

	for _, cut := range []time.Duration{10 * time.Second, 30 * time.Second} {
		l := leader(t)
		t.Logf("cutting %s off the network for %s; churn so far: %s", l.Name, cut, c)
		if err := lan.Cut(l.Name); err != nil {
			t.Fatal(err)
		}
		time.Sleep(cut)
		if err := lan.Heal(l.Name); err != nil {
			t.Fatal(err)
		}
		settle(t, w, ns)
	}

	c.halt()
	t.Logf("churn: %s", c)
	c = nil
	waitAllHaveIPs(t, w, ns)
	if vs := w.Violations(); len(vs) > 0 {
		t.Fatalf("%d broken promises:\n%s", len(vs), lbwatch.Report(vs))
	}
	t.Logf("watch: %s", w.Summary())
	checkFinal(t, ns)
}

// settle waits until some agent leads and Services created after the
// fault get addresses.
func settle(t *testing.T, w *lbwatch.Watcher, ns string) {
	t.Helper()
	start := time.Now()
	l := leader(t)
	waitAllHaveIPs(t, w, ns)
	t.Logf("%s leads; every Service has an address %s after the fault ended; %s", l.Name, time.Since(start).Round(time.Millisecond), w.Summary())
	if vs := w.Violations(); len(vs) > 0 {
		t.Fatalf("%d broken promises:\n%s", len(vs), lbwatch.Report(vs))
	}
}

// TestHealthAfterAPIServerOutage: while the API server is gone the agents
// keep every address and every agent's /healthz comes to say it is
// Degraded (readiness that stayed OK would hide the outage); once it is back,
// /healthz of every agent is OK again as soon as its watches recover
// (issue: it stayed Degraded with the old "connection refused" error), and
// new Services get addresses. Two outages: the API server frozen for 60 s
// (connections hang), and killed for 20 s (connections refused), then
// started again. How long each step took is logged, not checked.
func TestHealthAfterAPIServerOutage(t *testing.T) {
	logAgentsOnFailure(t)
	ns := namespace(t, "outage")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := lbwatch.Start(ctx, kube, ns)
	if err != nil {
		t.Fatal(err)
	}
	createServices(t, ns, "before", 50)
	waitAllHaveIPs(t, w, ns)
	for _, a := range agents {
		waitHealthy(t, a)
	}

	outage(t, "frozen", 60*time.Second, func() func() error {
		if err := testCluster.FreezeAPIServer(); err != nil {
			t.Fatal(err)
		}
		return testCluster.ThawAPIServer
	})
	createServices(t, ns, "after-freeze", 10)
	waitAllHaveIPs(t, w, ns)

	outage(t, "killed", 20*time.Second, func() func() error {
		argv, err := testCluster.KillAPIServer()
		if err != nil {
			t.Fatal(err)
		}
		return func() error { return testCluster.StartAPIServer(argv) }
	})
	createServices(t, ns, "after-restart", 10)
	waitAllHaveIPs(t, w, ns)
	if vs := w.Violations(); len(vs) > 0 {
		t.Fatalf("%d broken promises:\n%s", len(vs), lbwatch.Report(vs))
	}
}

// outage runs stop (which returns how to end the outage) and keeps the API
// server away for length, and longer if need be (up to timeout) until
// every agent's /healthz has answered 503 naming a Degraded module: an agent
// whose requests hang on a frozen API server rather than fail notices only
// when client-go gives up on the connection. The check ends the outage
// before it fails the test, so that a failure does not leave the API
// server down. Then it waits until every agent is healthy again and logs
// how long each step took.
func outage(t *testing.T, what string, length time.Duration, stop func() (resume func() error)) {
	t.Helper()
	t.Logf("kube-apiserver %s for %s", what, length)
	resume := stop()
	start := time.Now()
	last := map[string]string{}    // agent: its last answer while not Degraded
	seen := map[string]time.Time{} // agent: when it first said Degraded
	for len(seen) < len(agents) && time.Since(start) < timeout {
		for _, a := range agents {
			if _, ok := seen[a.Name]; ok {
				continue
			}
			code, body, err := a.Healthz()
			switch {
			case err != nil:
				last[a.Name] = err.Error()
			case code == http.StatusServiceUnavailable && strings.Contains(body, "Degraded"):
				seen[a.Name] = time.Now()
				t.Logf("%s: /healthz Degraded %s into the outage:\n%s", a.Name, time.Since(start).Round(time.Millisecond), degradedLines(body))
			default:
				last[a.Name] = fmt.Sprintf("/healthz %d\n%s", code, strings.TrimSpace(body))
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Until(start.Add(length)))
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	if len(seen) < len(agents) {
		var missing []string
		for _, a := range agents {
			if _, ok := seen[a.Name]; !ok {
				missing = append(missing, a.Name+": "+last[a.Name])
			}
		}
		t.Fatalf("kube-apiserver %s for %s, yet not every agent's /healthz said Degraded:\n%s", what, time.Since(start).Round(time.Second), strings.Join(missing, "\n"))
	}
	back := time.Now()
	for _, a := range agents {
		prev := waitHealthy(t, a)
		t.Logf("%s: /healthz OK %s after the API server came back; last Degraded:\n%s", a.Name, time.Since(back).Round(time.Millisecond), degradedLines(prev))
	}
}

// degradedLines keeps the lines of a /healthz answer that name a Degraded
// module.
func degradedLines(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, "Degraded") {
			out = append(out, "    "+strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "\n")
}

// waitHealthy waits until the agent's /healthz answers 200, and returns
// the last answer before that.
func waitHealthy(t testing.TB, a *agentproc.Agent) (last string) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		code, body, err := a.Healthz()
		if err != nil {
			return false, a.Name + ": " + err.Error()
		}
		if code != http.StatusOK {
			last = body
		}
		return code == http.StatusOK, a.Name + ": /healthz " + http.StatusText(code) + "\n" + body
	})
	return last
}
