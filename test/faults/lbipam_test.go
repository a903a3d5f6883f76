package faults

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

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
// keep every address; once it is back, /healthz of every agent is OK again
// as soon as its watches recover (issue: it stayed Degraded with the old
// "connection refused" error), and new Services get addresses. Two
// outages: the API server frozen for 60 s (connections hang), and killed
// for 20 s (connections refused), then started again.
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
	waitHealthy(t)

	outage(t, "frozen for 60s", func() func() error {
		if err := testCluster.FreezeAPIServer(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(60 * time.Second)
		return testCluster.ThawAPIServer
	})
	createServices(t, ns, "after-freeze", 10)
	waitAllHaveIPs(t, w, ns)

	outage(t, "killed for 20s", func() func() error {
		argv, err := testCluster.KillAPIServer()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Second)
		return func() error { return testCluster.StartAPIServer(argv) }
	})
	createServices(t, ns, "after-restart", 10)
	waitAllHaveIPs(t, w, ns)
	if vs := w.Violations(); len(vs) > 0 {
		t.Fatalf("%d broken promises:\n%s", len(vs), lbwatch.Report(vs))
	}
}

// outage runs stop (which returns how to end the outage), logs what the
// agents' /healthz said meanwhile, ends it and waits until every agent is
// healthy again.
func outage(t *testing.T, what string, stop func() (resume func() error)) {
	t.Helper()
	t.Logf("kube-apiserver %s", what)
	resume := stop()
	for _, a := range agents {
		if code, body, err := a.Healthz(); err == nil {
			t.Logf("%s during the outage: /healthz %d\n%s", a.Name, code, strings.TrimSpace(body))
		}
	}
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	waitHealthy(t)
	t.Logf("every agent's /healthz is OK %s after the API server came back", time.Since(back).Round(time.Millisecond))
}

// waitHealthy waits until every agent's /healthz answers 200.
func waitHealthy(t testing.TB) {
	t.Helper()
	for _, a := range agents {
		waitFor(t, timeout, func() (bool, string) {
			code, body, err := a.Healthz()
			if err != nil {
				return false, a.Name + ": " + err.Error()
			}
			return code == http.StatusOK, a.Name + ": /healthz " + http.StatusText(code) + "\n" + body
		})
	}
}
