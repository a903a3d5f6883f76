package faults

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
)

// What troubleshooting.md ("Pods are NotReady after an API-server
// outage") tells users to look for; the tests check that the agents say
// it.
var (
	// Every agent's /healthz while the API server refuses connections.
	refusedWatch = regexp.MustCompile(`(?m)^k8s-watch\.job-reflect-services: Degraded (watch|list) services: .*connection refused`)
	// The allocating agent's /healthz while its renewals fail.
	renewalsFail = regexp.MustCompile(`(?m)^election\.job-campaign-herald-lb-ipam: Degraded leading, term \d+, but renewals fail`)
	// The other agents' /healthz meanwhile.
	campaignFails = regexp.MustCompile(`(?m)^election\.job-campaign-herald-lb-ipam: Degraded campaigning, Lease API failing`)
	// Every agent's log, from the outage to being in sync again.
	outageLogs = []*regexp.Regexp{
		regexp.MustCompile(`msg="API server unreachable; probing /readyz until it is ready"`),
		regexp.MustCompile(`msg="API server ready again; reconnecting" .*probes=\d+`),
		regexp.MustCompile(`msg="In sync with the API server again" .*kind=services`),
		regexp.MustCompile(`msg="In sync with the API server again" .*kind=lb-pools`),
	}
	// The allocating agent's log while its renewals fail.
	renewalLog = regexp.MustCompile(`msg="Lease election" .*leading=true error=".*connection refused`)
)

// waitHealthzMatches waits until the agent's /healthz answers 503 with a
// body that matches every one of res.
func waitHealthzMatches(t *testing.T, a *agentproc.Agent, res ...*regexp.Regexp) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		code, body, err := a.Healthz()
		if err != nil {
			return false, a.Name + ": " + err.Error()
		}
		for _, re := range res {
			if code != http.StatusServiceUnavailable || !re.MatchString(body) {
				return false, fmt.Sprintf("%s: /healthz %d, want 503 and a line matching %q:\n%s", a.Name, code, re, body)
			}
		}
		return true, ""
	})
}

// expectLapsed fails the test unless herald-dbg statedb leadership on the
// allocator shows it leading with ValidUntil in the past, as
// troubleshooting.md says it does while its renewals fail.
func expectLapsed(t *testing.T, a *agentproc.Agent) {
	t.Helper()
	rows, err := agentproc.Table[*tables.Leadership](a, tables.LeadershipTableName)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range rows {
		if l.Lease != tables.LBIPAMLease {
			continue
		}
		if !l.Leading || !l.ValidUntil.Before(time.Now()) {
			t.Errorf("%s: herald-dbg statedb leadership without the API server: leading %v, ValidUntil %s; want leading, ValidUntil in the past",
				a.Name, l.Leading, l.ValidUntil.Format(time.RFC3339Nano))
		}
		return
	}
	t.Errorf("%s: herald-dbg statedb leadership has no row %s", a.Name, tables.LBIPAMLease)
}

// expectLogged fails the test unless the agent logged a line matching each
// of res since the mark.
func expectLogged(t *testing.T, a *agentproc.Agent, since agentproc.LogMark, res ...*regexp.Regexp) {
	t.Helper()
	logs := a.LogsSince(since)
	for _, re := range res {
		if !re.MatchString(logs) {
			t.Errorf("%s: no log line matching %q since the outage began:\n%s", a.Name, re, agentproc.Tail(logs, 40))
		}
	}
}

// livenessWatch polls every agent's /livez (the chart's liveness and
// startup probe) until stopped: an agent that answered anything but 200
// would be restarted by the kubelet in the middle of an outage it can
// do nothing about.
type livenessWatch struct {
	stop chan struct{}
	once sync.Once
	done sync.WaitGroup
	mu   sync.Mutex
	bad  []string
	n    int
}

func watchLiveness(t *testing.T, as []*agentproc.Agent) *livenessWatch {
	w := &livenessWatch{stop: make(chan struct{})}
	t.Cleanup(w.halt)
	for _, a := range as {
		w.done.Add(1)
		go func() {
			defer w.done.Done()
			for {
				select {
				case <-w.stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
				answer := livez(a)
				w.mu.Lock()
				w.n++
				if answer != "200 ok" {
					w.bad = append(w.bad, a.Name+": "+answer)
				}
				w.mu.Unlock()
			}
		}()
	}
	return w
}

func (w *livenessWatch) halt() {
	w.once.Do(func() { close(w.stop) })
	w.done.Wait()
}

// check stops the watch and fails the test if any answer was not 200.
func (w *livenessWatch) check(t *testing.T) {
	t.Helper()
	w.halt()
	if len(w.bad) > 0 {
		t.Errorf("/livez failed %d of %d times across the outage, e.g.:\n%s", len(w.bad), w.n, strings.Join(w.bad[:min(5, len(w.bad))], "\n"))
		return
	}
	t.Logf("/livez answered 200 all %d times across the outage", w.n)
}

// livez is the status code and body of the agent's /livez, or the error.
func livez(a *agentproc.Agent) string {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + a.HealthAddr + "/livez")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
}
