package faults

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/lbwatch"
)

// TestBackToWorkAfterAPIServerRestart: the API server is killed with
// SIGKILL, stays down 20 s and is started again. Before the agents can
// reach it (their connections to it are refused, as while it was down), a
// Service is created and one from before the outage deleted; then they
// reach it. No agent's /healthz may say OK while its Services table misses
// either change: OK means every watch is in sync again (issue: agents said
// OK while their Service watch sat in client-go's backoff, and new
// Services waited 13.9 s). The new Service gets an address. Meanwhile
// each agent says what troubleshooting.md tells users to look for (its
// /healthz lines, its log lines, the allocator's lapsed term in herald-dbg),
// and /livez answers 200 throughout. How
// long each step took is logged, not checked.
func TestBackToWorkAfterAPIServerRestart(t *testing.T) {
	logAgentsOnFailure(t)
	ns := namespace(t, "restart")
	createServices(t, ns, "before", 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := lbwatch.Start(ctx, kube, ns)
	if err != nil {
		t.Fatal(err)
	}
	waitAllHaveIPs(t, w, ns)
	for _, a := range agents {
		waitHealthy(t, a)
	}
	apiAddr := apiServerAddr(t)
	allocator := leader(t)
	marks := map[string]agentproc.LogMark{}
	for _, a := range agents {
		marks[a.Name] = a.Mark()
	}
	live := watchLiveness(t, agents)

	t.Logf("killing kube-apiserver for 20 s")
	argv, err := testCluster.KillAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		if err := lan.Refuse(a.Name, apiAddr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = lan.Allow(a.Name) })
	}
	down := time.Now()
	for _, a := range agents {
		waitDegraded(t, a)
		if a == allocator {
			waitHealthzMatches(t, a, refusedWatch, renewalsFail)
			expectLapsed(t, a)
		} else {
			waitHealthzMatches(t, a, refusedWatch, campaignFails)
		}
	}
	time.Sleep(time.Until(down.Add(20 * time.Second)))
	if err := testCluster.StartAPIServer(argv); err != nil {
		t.Fatal(err)
	}
	created, deleted := "after-restart", "before-0"
	createServices(t, ns, created, 1)
	if err := kube.CoreV1().Services(ns).Delete(context.Background(), deleted, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	created += "-0"
	for _, a := range agents {
		if err := lan.Allow(a.Name); err != nil {
			t.Fatal(err)
		}
	}
	back := time.Now()
	t.Logf("kube-apiserver ready; %s/%s created, %s/%s deleted; the agents reach it again", ns, created, ns, deleted)

	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pollHealthy(a); err != nil {
				t.Error(err)
				return
			}
			took := time.Since(back)
			rows, err := agentproc.Table[*tables.Service](a, tables.ServicesTableName)
			if err != nil {
				t.Error(err)
				return
			}
			have := map[string]bool{}
			for _, s := range rows {
				have[s.Key()] = true
			}
			if !have[ns+"/"+created] || have[ns+"/"+deleted] {
				t.Errorf("%s: /healthz OK %s after the API server was back, yet its Services table has %s: %v, %s: %v (want true, false)",
					a.Name, took.Round(time.Millisecond), created, have[ns+"/"+created], deleted, have[ns+"/"+deleted])
				return
			}
			t.Logf("%s: /healthz OK %s after the API server was back, its Services table in sync", a.Name, took.Round(time.Millisecond))
		}()
	}
	waitFor(t, timeout, func() (bool, string) {
		s, err := kube.CoreV1().Services(ns).Get(context.Background(), created, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(s.Status.LoadBalancer.Ingress) > 0, created + " has no address"
	})
	t.Logf("%s has an address %s after the API server was back", created, time.Since(back).Round(time.Millisecond))
	wg.Wait()
	live.check(t)
	for _, a := range agents {
		expectLogged(t, a, marks[a.Name], outageLogs...)
	}
	expectLogged(t, allocator, marks[allocator.Name], renewalLog)
	waitAllHaveIPs(t, w, ns)
	if vs := w.Violations(); len(vs) > 0 {
		t.Fatalf("%d broken promises:\n%s", len(vs), lbwatch.Report(vs))
	}
}

// apiServerAddr is the address and port the agents reach the API server at.
func apiServerAddr(t *testing.T) netip.AddrPort {
	t.Helper()
	u, err := url.Parse(testCluster.RESTConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := netip.ParseAddrPort(u.Host)
	if err != nil {
		t.Fatalf("API server address %q: %v", u.Host, err)
	}
	return ap
}

// waitDegraded waits until the agent's /healthz says Degraded.
func waitDegraded(t *testing.T, a *agentproc.Agent) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		code, body, err := a.Healthz()
		if err != nil {
			return false, a.Name + ": " + err.Error()
		}
		return code == http.StatusServiceUnavailable && strings.Contains(body, "Degraded"), a.Name + ": /healthz " + http.StatusText(code) + "\n" + body
	})
}

// pollHealthy polls the agent's /healthz every 20 ms until it answers 200
// (waitHealthy for other goroutines than the test's: it returns an error).
func pollHealthy(a *agentproc.Agent) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		code, body, err := a.Healthz()
		if err == nil && code == http.StatusOK {
			return nil
		}
		last = fmt.Sprint(code, " ", body, err)
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s: /healthz not OK within %s: %s", a.Name, timeout, last)
}
