package cpvip

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHerald runs herald-agent control-plane-vip on the three nodes and
// checks, on the wire, what Documentation/control-plane-vip.md promises:
// one owner for both VIPs, another node within its failover time for
// every fault of the owner (IPv4 and IPv6, never two MACs for one
// request), an immediate handover when the owner stops, the reasons
// herald-dbg gives, and a clear answer to bad input. Outcomes only: the
// figures are test/realcluster/havip's and the benchmark's.
func TestHerald(t *testing.T) {
	cp := upT(t, Options{StartAgents: true})
	t.Run("one owner for both VIPs", func(t *testing.T) { checkOneOwner(t, cp) })
	for _, f := range []struct {
		name       string
		do, undo   func(n *CPNode) error
		agentStops bool
	}{
		{"kill -9 of the owner's kube-apiserver", (*CPNode).KillAPIServer, (*CPNode).StartAPIServer, false},
		{"kill -9 of the owner's agent", (*CPNode).KillAgent, func(n *CPNode) error { return n.StartAgent() }, true},
		{"freezing the owner's namespace", (*CPNode).Freeze, (*CPNode).Thaw, false},
		{"cutting the owner's link", (*CPNode).Cut, (*CPNode).Heal, false},
		{"SIGTERM to the owner's agent (a release)", (*CPNode).StopAgent, func(n *CPNode) error { return n.StartAgent() }, true},
	} {
		t.Run(f.name, func(t *testing.T) { checkFailover(t, cp, f.do, f.undo) })
	}
	t.Run("herald-dbg says why", func(t *testing.T) { checkWhy(t, cp) })
	t.Run("bad input", func(t *testing.T) { checkBadInput(t, cp) })
}

// settle waits until every API server is ready, every agent runs and the
// IPv4 VIP is answered by the same node before and after the others had
// time to be candidates again; it returns that owner (a node that answered
// before may have lost the VIPs meanwhile, if its API server turned not
// ready).
func settle(t *testing.T, cp *ControlPlane) *CPNode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for _, n := range cp.Nodes {
		if err := n.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w, err := cp.WatchVIP(ctx, VIP, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ctx.Err() == nil {
		if owner := cp.NodeByMAC(w.Current()); owner != "" {
			// The others need readyz-success-threshold probes to be
			// candidates again.
			time.Sleep(1500 * time.Millisecond)
			if cp.NodeByMAC(w.Current()) == owner {
				return cp.Node(owner)
			}
			continue
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the VIP is not answered:\n%s", cp.Logs(30))
	return nil
}

func checkOneOwner(t *testing.T, cp *ControlPlane) {
	owner := settle(t, cp)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	w4, err := cp.WatchVIP(ctx, VIP, WatchEvery)
	if err != nil {
		t.Fatal(err)
	}
	w6, err := cp.WatchVIP(ctx, VIP6, WatchEvery)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	for _, rec := range []*VIPRecord{w4.Stop(), w6.Stop()} {
		if len(rec.Doubles) > 0 || rec.OwnerAt(time.Now()) != owner.MAC() {
			t.Errorf("want %s alone answering %s:\n%s", owner.Name, rec.VIP, rec.Format(cp.NodeByMAC))
		}
	}
}

// checkFailover applies one fault to the owner and watches both VIPs: a
// different node answers each, and no request is answered twice.
func checkFailover(t *testing.T, cp *ControlPlane, do, undo func(*CPNode) error) {
	owner := settle(t, cp)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var ws []*VIPWatch
	for _, vip := range []netip.Addr{VIP, VIP6} {
		w, err := cp.WatchVIP(ctx, vip, WatchEvery)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	time.Sleep(200 * time.Millisecond)
	at := time.Now()
	if err := do(owner); err != nil {
		t.Fatal(err)
	}
	for time.Since(at) < 10*time.Second && (ws[0].Current() == owner.MAC() || ws[1].Current() == owner.MAC()) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
	var recs []*VIPRecord
	for _, w := range ws {
		recs = append(recs, w.Stop())
	}
	if err := undo(owner); err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		gap, ok := rec.Failover(at, owner.MAC())
		switch {
		case !ok:
			t.Errorf("nobody took %s over from %s:\n%s", rec.VIP, owner.Name, rec.Format(cp.NodeByMAC))
		case len(rec.Doubles) > 0:
			t.Errorf("%s: %d requests answered by two MACs:\n%s", rec.VIP, len(rec.Doubles), rec.Format(cp.NodeByMAC))
		default:
			t.Logf("%s: %s → %s in %s", rec.VIP, owner.Name, cp.NodeByMAC(rec.OwnerAt(time.Now())), gap.Round(time.Millisecond))
		}
	}
}

// checkWhy asks every node's herald-dbg about the VIP, while a watch
// checks that the owner stays the same meanwhile. On a loaded machine an
// API server can turn not ready in between (its etcd lost its leader), and
// the VIPs rightly move: then herald-dbg is asked again about the new
// state, up to three times.
func checkWhy(t *testing.T, cp *ControlPlane) {
	for attempt := 1; ; attempt++ {
		owner := settle(t, cp)
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		w, err := cp.WatchVIP(ctx, VIP, WatchEvery)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		problems := whyProblems(t, cp, owner)
		rec := w.Stop()
		cancel()
		if spans := rec.AnsweredBy(); len(spans) != 1 || spans[0].Answer != owner.MAC() {
			if attempt == 3 {
				t.Fatalf("the VIP moved during each of three checks; the last:\n%s", rec.Format(cp.NodeByMAC))
			}
			t.Logf("the VIP moved away from %s during the check, asking again:\n%s", owner.Name, rec.Format(cp.NodeByMAC))
			continue
		}
		for _, p := range problems {
			t.Error(p)
		}
		return
	}
}

// whyProblems lists where a node's herald-dbg disagrees with owner owning
// the VIPs.
func whyProblems(t *testing.T, cp *ControlPlane, owner *CPNode) []string {
	var problems []string
	for _, n := range cp.Nodes {
		out, err := n.Dbg("statedb", "control-plane-vip")
		if err != nil {
			t.Fatalf("%s: %v\n%s", n.Name, err, out)
		}
		want := "standby: " + owner.Name + " owns the VIPs"
		if n == owner {
			want = "owner: a quorum granted this node"
		}
		if !strings.Contains(string(out), want) {
			problems = append(problems, fmt.Sprintf("%s's herald-dbg statedb control-plane-vip does not say %q:\n%s", n.Name, want, out))
		}
		// This mode's responder maps, not the DaemonSet agent's: the
		// owner's list the VIPs, the others' do not.
		out, err = n.Dbg("bpf", "responder")
		if err != nil {
			t.Fatalf("%s: %v\n%s", n.Name, err, out)
		}
		for _, vip := range []string{VIP.String(), VIP6.String()} {
			listed := slices.ContainsFunc(strings.Split(string(out), "\n"), func(l string) bool {
				f := strings.Fields(l)
				return len(f) > 0 && f[0] == vip
			})
			if listed != (n == owner) {
				problems = append(problems, fmt.Sprintf("%s's herald-dbg bpf responder lists %s: %v, owner %s:\n%s", n.Name, vip, listed, owner.Name, out))
			}
		}
	}
	return problems
}

// checkBadInput restarts a non-owner with bad settings, one after the
// other: each is said in its log and its metrics, the VIP stays with the
// owner, and a secret too short or missing stops the agent at start.
func checkBadInput(t *testing.T, cp *ControlPlane) {
	owner := settle(t, cp)
	// The agents started with the API servers, with the right readyz-url:
	// what a starting API server answers is no bad input.
	for _, m := range cp.Nodes {
		if logs := m.agent.logs(5000); strings.Contains(logs, "is readyz-url the API server's /readyz?") {
			t.Errorf("%s, with the right readyz-url, logged it as wrong:\n%s", m.Name, agentTail(logs))
		}
	}
	var n *CPNode
	for _, m := range cp.Nodes {
		if m != owner {
			n = m
		}
	}
	for _, tc := range []struct {
		name        string
		args        []string
		log         string
		metric      string
		metricValue float64
		atLeast     bool // a counter: metricValue or more
	}{
		{"a VIP on no local subnet", []string{"--vips=198.19.77.1," + VIP6.String()},
			"VIP 198.19.77.1 is on no subnet of a selected device", `herald_control_plane_candidacy_errors{kind="vip-subnet"}`, 1, false},
		{"other VIPs than the peers'", []string{"--vips=" + VIP.String()},
			"A control-plane node is configured differently", "herald_control_plane_peer_config_mismatches", 2, false},
		{"a wrong readyz URL", []string{"--readyz-url=https://127.0.0.1:6443/readyzz"},
			// The API server answers 403 to anonymous users for any other
			// path: a wrong URL once that lasts past the grace.
			"answered 403 Forbidden: is readyz-url the API server's /readyz?", `herald_control_plane_readyz_probes_total{result="error"}`, 1, true},
		{"an http:// readyz URL", []string{"--readyz-url=http://127.0.0.1:6443/readyz"},
			"answered 400 Bad Request: is readyz-url the API server's /readyz?", `herald_control_plane_readyz_probes_total{result="error"}`, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := n.StopAgent(); err != nil {
				t.Fatal(err)
			}
			if err := n.StartAgent(tc.args...); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(waitTimeout)
			for {
				v, err := metric(cp, n, tc.metric)
				logs := n.agent.logs(400)
				if err == nil && (v == tc.metricValue || tc.atLeast && v > tc.metricValue) && strings.Contains(logs, tc.log) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: want the log to say %q and %s = %v (is %v, %v):\n%s", n.Name, tc.log, tc.metric, tc.metricValue, v, err, agentTail(logs))
				}
				time.Sleep(200 * time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			w, err := cp.WatchVIP(ctx, VIP, WatchEvery)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			if rec := w.Stop(); len(rec.Doubles) > 0 || rec.OwnerAt(time.Now()) != owner.MAC() {
				t.Fatalf("with %s on %s the VIP is not %s's alone:\n%s", tc.name, n.Name, owner.Name, rec.Format(cp.NodeByMAC))
			}
		})
	}
	short := filepath.Join(cp.Dir, "short-secret")
	if err := os.WriteFile(short, []byte("tooshort\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, file, want string }{
		{"a peer secret too short", short, "shorter than 16 characters"},
		{"a peer secret missing", filepath.Join(cp.Dir, "no-secret"), "peer-secret-file: open " + filepath.Join(cp.Dir, "no-secret") + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := n.StopAgent(); err != nil {
				t.Fatal(err)
			}
			argv := append(cp.agentArgv(n, nil), "--peer-secret-file="+tc.file)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Host.Netns}, argv...)...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("the agent with %s: %v, want an exit saying %q:\n%s", tc.name, err, tc.want, agentTail(string(out)))
			}
		})
	}
	if err := n.StopAgent(); err != nil {
		t.Fatal(err)
	}
	if err := n.StartAgent(); err != nil {
		t.Fatal(err)
	}
}

// metric reads one sample of the node's agent's /metrics (name with its
// labels, as exposed).
func metric(cp *ControlPlane, n *CPNode, name string) (float64, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: DialerIn(cp.Client.Netns, 2*time.Second), DisableKeepAlives: true}}
	resp, err := c.Get(fmt.Sprintf("http://%s/metrics", hostPort(n.Host.IP, AgentMetricsPort)))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(io.LimitReader(resp.Body, 4<<20))
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("%s: no metric %s", n.Name, name)
}

func agentTail(s string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(len(lines)-40, 0):], "\n")
}
