package cpvip

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/suite"
)

// benchFault is one fault of the VIP's owner and how it recovers.
type benchFault struct {
	name     string
	do, undo func(d vipDaemons, n *CPNode) error
}

var benchFaults = []benchFault{
	{"kill -9 kube-apiserver",
		func(_ vipDaemons, n *CPNode) error { return n.KillAPIServer() },
		func(_ vipDaemons, n *CPNode) error {
			if err := n.StartAPIServer(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
			defer cancel()
			return n.WaitReady(ctx)
		}},
	{"kill -9 VIP daemon", func(d vipDaemons, n *CPNode) error { return d.Kill(n) }, func(d vipDaemons, n *CPNode) error { return d.Restart(n) }},
	{"freeze namespace", func(_ vipDaemons, n *CPNode) error { return n.Freeze() }, func(_ vipDaemons, n *CPNode) error { return n.Thaw() }},
	{"cut link", func(_ vipDaemons, n *CPNode) error { return n.Cut() }, func(_ vipDaemons, n *CPNode) error { return n.Heal() }},
}

// benchTakeoverCap is how long a trial waits for another node to answer:
// a fault nobody took over from within it is a failed trial.
const benchTakeoverCap = 10 * time.Second

// benchDaemons are the daemons HERALD_CPVIP_DAEMONS names, in the
// report's order.
func benchDaemons(b *testing.B) []vipDaemons {
	names := strings.Split(os.Getenv("HERALD_CPVIP_DAEMONS"), ",")
	if names[0] == "" {
		names = []string{"herald", "keepalived", "kube-vip"}
	}
	var daemons []vipDaemons
	for _, name := range names {
		name, timings, _ := strings.Cut(strings.TrimSpace(name), "=")
		switch name {
		case "herald":
			daemons = append(daemons, heraldDaemons{})
		case "keepalived":
			daemons = append(daemons, newKeepalivedDaemons(time.Second), newKeepalivedDaemons(100*time.Millisecond))
		case "kube-vip":
			bin, err := BuildKubeVip(cluster.RepoRoot())
			if err != nil {
				b.Fatal(err)
			}
			if timings == "" {
				daemons = append(daemons, newKubeVipDaemons(bin, KubeVipDefaults), newKubeVipDaemons(bin, KubeVipFastest))
				break
			}
			var t KubeVipTimings
			if _, err := fmt.Sscanf(timings, "%d/%d/%d", &t.Duration, &t.RenewDeadline, &t.Retry); err != nil {
				b.Fatalf("HERALD_CPVIP_DAEMONS: kube-vip=%s: want the Lease's duration/renew deadline/retry in seconds, as 5/3/1", timings)
			}
			daemons = append(daemons, newKubeVipDaemons(bin, t))
		default:
			b.Fatalf("HERALD_CPVIP_DAEMONS: unknown daemon %q (herald, keepalived, kube-vip, kube-vip=<duration>/<renew deadline>/<retry>)", name)
		}
	}
	return daemons
}

// trialResult is what one trial saw.
type trialResult struct {
	failover   time.Duration
	tookOver   bool // another node answered within benchTakeoverCap
	doubles    int  // probes answered by two MACs
	doubledFor time.Duration
	// doubledAtEnd: the last answered probe was answered twice, the
	// doubles lasted as long as the watch (until the owner's restore).
	doubledAtEnd bool
	apiLongest   time.Duration // the API loop's longest time without an answer
	apiFailed    int
}

// BenchmarkControlPlaneVIPFailover measures, on the harness's control
// plane, how long the IPv4 VIP goes to another node after each fault of
// its owner, with Herald's agents and with keepalived, side by side in
// one run. It is a benchmark, not a test: `go test` runs it only with
// -bench; it asserts nothing about time and runs its experiment once,
// whatever b.N (run it with -benchtime 1x). make bench-cpvip runs it:
//
//	flock /tmp/herald-itest.lock go test -run '^$' -bench BenchmarkControlPlaneVIPFailover -benchtime 1x -timeout 100m ./test/cpvip/
//
// HERALD_CPVIP_TRIALS is the number of trials per daemon and fault (20);
// HERALD_CPVIP_DAEMONS the daemons, a comma-separated list of herald,
// keepalived and kube-vip (all three), or kube-vip=5/3/1 for kube-vip
// with those Lease timings only; HERALD_KUBEVIP a kube-vip binary (else
// hack/kube-vip.sh builds one).
//
// The daemons: Herald's agents with their defaults; keepalived (VRRPv3,
// unicast, equal priorities, nopreempt) with the agent's health check
// (/readyz every 100 ms, 300 ms timeout, 3 failures, 10 successes: a
// prober keepalived tracks, since its own scripts run at most once a
// second), once with keepalived's default advert_int of 1 s and once
// with 0.1 s, a fast setup: a backup takes over after 3 adverts missed
// plus the skew of priority 100, about 3.6 intervals; kube-vip v0.9 in
// control-plane mode with ARP, its owner chosen by a Lease on the API
// servers it fronts (reached on loopback), which is its only health
// check, once with its default Lease timings (5 s, renew deadline 3 s,
// retry 1 s) and once with the shortest valid ones (3 s, 2 s, 1 s).
func BenchmarkControlPlaneVIPFailover(b *testing.B) {
	b.ReportMetric(0, "ns/op")
	trials := suite.EnvInt(b, "HERALD_CPVIP_TRIALS", 20)
	loadStart := kaLoadavg()
	cp, err := Up(context.Background(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if b.Failed() {
			cp.KeepLogs = true
		}
		if err := cp.Down(); err != nil {
			b.Errorf("Down: %v", err)
		}
	})
	daemons := benchDaemons(b)
	results := map[string][]trialResult{}
	for _, d := range daemons {
		if err := d.Start(cp); err != nil {
			b.Fatalf("starting %s: %v", d.Name(), err)
		}
		for _, f := range benchFaults {
			for i := range trials {
				r := benchTrial(b, cp, d, f, i)
				results[d.Name()+"\x00"+f.name] = append(results[d.Name()+"\x00"+f.name], r)
			}
		}
		if err := d.Stop(cp); err != nil {
			b.Fatalf("stopping %s: %v", d.Name(), err)
		}
	}
	suite.Say(b, "%s", benchTable(daemons, results))
	suite.Say(b, "load average at the start %s, at the end %s", loadStart, kaLoadavg())
}

// benchTrial runs one fault on the current owner: it waits until the
// control plane is settled, watches the IPv4 VIP every WatchEvery and
// lists the Nodes through it, applies the fault, waits for another MAC
// (benchTakeoverCap at most), a second more and until the client is
// answered again, then restores the owner.
func benchTrial(b *testing.B, cp *ControlPlane, d vipDaemons, f benchFault, i int) trialResult {
	benchSettle(b, cp, d)
	ctx, cancel := context.WithTimeout(context.Background(), 2*benchTakeoverCap)
	defer cancel()
	w, err := cp.WatchVIP(ctx, VIP, WatchEvery)
	if err != nil {
		b.Fatal(err)
	}
	api, err := cp.APILoop(ctx, cp.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	owner := cp.Node(cp.NodeByMAC(w.Current()))
	if owner == nil {
		w.Stop()
		api.Stop()
		b.Fatalf("%s, %s, trial %d: the VIP is answered by %q, no node", d.Name(), f.name, i, w.Current())
	}
	at := time.Now()
	if err := f.do(d, owner); err != nil {
		b.Fatal(err)
	}
	applied := time.Since(at)
	// Another node, then a second of what follows the takeover (double
	// answers too), from the takeover: a fault may take a while to apply.
	end := at.Add(benchTakeoverCap)
	for time.Now().Before(end) {
		if took, ok := w.TakenOver(at, owner.MAC()); ok {
			end = took
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Until(end.Add(time.Second)))
	// The client answered again, before the owner is restored: a request
	// a frozen owner's API server had taken waits for the client's timeout.
	api.WaitAnswerSince(end, APITimeout+2*time.Second)
	rec, apiRec := w.Stop(), api.Stop()
	if err := f.undo(d, owner); err != nil {
		b.Fatal(err)
	}
	r := summarize(rec, apiRec, at, owner.MAC())
	suite.Say(b, "%s, %s, trial %d: %s -> %s in %s (took over: %t; the fault took %s to apply); "+
		"%d probes answered by two MACs (over %s, still at the end: %t); kubectl: %d failed, longest without an answer %s\n%s",
		d.Name(), f.name, i, owner.Name, answerNames(cp, rec.OwnerAt(time.Now())), r.failover.Round(time.Millisecond), r.tookOver,
		applied.Round(time.Millisecond), r.doubles, r.doubledFor, r.doubledAtEnd, r.apiFailed, r.apiLongest.Round(time.Millisecond),
		timeline(cp, rec, at))
	if rec.Err != nil {
		b.Fatalf("watching the VIP: %v", rec.Err)
	}
	return r
}

// summarize is a trial's result from what the watch and the API loop saw
// of the fault at at, of the owner with MAC from.
func summarize(rec *VIPRecord, apiRec *APIRecord, at time.Time, from string) trialResult {
	r := trialResult{doubles: len(rec.Doubles), apiLongest: apiRec.LongestWithoutAnswer(), apiFailed: apiRec.Failed()}
	r.failover, r.tookOver = rec.Failover(at, from)
	if r.failover > benchTakeoverCap {
		r.failover, r.tookOver = 0, false
	}
	if n := len(rec.Doubles); n > 0 {
		// From the first double-answered probe to the last, one probe
		// interval each.
		r.doubledFor = time.Duration(rec.Doubles[n-1].Request-rec.Doubles[0].Request+1) * rec.Every
	}
	for i := len(rec.Probes) - 1; i >= 0; i-- {
		if m := rec.Probes[i].MACs(); len(m) > 0 {
			r.doubledAtEnd = len(m) > 1
			break
		}
	}
	return r
}

// timeline is who answered the VIP, span by span, in seconds from the
// fault: "-0.30 cp1 | +0.28 nobody | +0.31 cp2".
func timeline(cp *ControlPlane, rec *VIPRecord, at time.Time) string {
	var parts []string
	for _, s := range rec.AnsweredBy() {
		parts = append(parts, fmt.Sprintf("%+.2f %s", s.From.Sub(at).Seconds(), answerNames(cp, s.Answer)))
	}
	if len(parts) > 12 {
		parts = append(append(parts[:6:6], fmt.Sprintf("... %d spans ...", len(parts)-12)), parts[len(parts)-6:]...)
	}
	return "    " + strings.Join(parts, " | ")
}

// answerNames names the nodes of a Probe.Answer: "cp1+cp2", "nobody".
func answerNames(cp *ControlPlane, answer string) string {
	if answer == "" {
		return "nobody"
	}
	var names []string
	for _, mac := range strings.Split(answer, "+") {
		if n := cp.NodeByMAC(mac); n != "" {
			mac = n
		}
		names = append(names, mac)
	}
	return strings.Join(names, "+")
}

// benchSettle waits until every API server is ready, every node's daemon
// runs and is a candidate, and one node alone answers the VIP; then, as
// the agents need readyz-success-threshold probes to be candidates again,
// 1.5 s more.
func benchSettle(b *testing.B, cp *ControlPlane, d vipDaemons) {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for _, n := range cp.Nodes {
		if err := n.WaitReady(ctx); err != nil {
			b.Fatal(err)
		}
	}
	var why error
	for ctx.Err() == nil {
		if why = d.Settled(cp); why == nil {
			if why = soleOwner(ctx, cp); why == nil {
				time.Sleep(1500 * time.Millisecond)
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("%s: not settled within %s: %v\n%s%s", d.Name(), readyTimeout, why, cp.Logs(30), d.Logs(cp))
}

// soleOwner watches the VIP for half a second: every probe must be
// answered, all by the same node.
func soleOwner(ctx context.Context, cp *ControlPlane) error {
	w, err := cp.WatchVIP(ctx, VIP, 20*time.Millisecond)
	if err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)
	rec := w.Stop()
	spans := rec.AnsweredBy()
	if len(spans) != 1 || cp.NodeByMAC(spans[0].Answer) == "" {
		return fmt.Errorf("the VIP is not answered by one node alone:\n%s", rec.Format(cp.NodeByMAC))
	}
	return nil
}

// benchTable is the report: a row per daemon and fault.
func benchTable(daemons []vipDaemons, results map[string][]trialResult) string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "daemon\tfault\tn\tfailover p50 (s)\tp99 (s)\tmax (s)\tno takeover in 10 s\ttrials with doubles\tdouble-answered probes\tlongest doubles (s)\tdoubles until the end\tkubectl longest without answer p50 (s)\tmax (s)\tkubectl failed requests\t")
	for _, d := range daemons {
		for _, f := range benchFaults {
			rs := results[d.Name()+"\x00"+f.name]
			var gaps, api []float64
			var failed, withDoubles, doubles, atEnd, apiFailed int
			var doubledFor time.Duration
			for _, r := range rs {
				if r.tookOver {
					gaps = append(gaps, r.failover.Seconds())
				} else {
					failed++
				}
				if r.doubles > 0 {
					withDoubles++
				}
				doubles += r.doubles
				doubledFor = max(doubledFor, r.doubledFor)
				if r.doubledAtEnd {
					atEnd++
				}
				api = append(api, r.apiLongest.Seconds())
				apiFailed += r.apiFailed
			}
			slices.Sort(gaps)
			slices.Sort(api)
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%.2f\t%d\t%s\t%s\t%d\t\n", d.Name(), f.name, len(rs),
				sec(suite.Percentile(gaps, 50)), sec(suite.Percentile(gaps, 99)), sec(suite.Percentile(gaps, 100)),
				failed, withDoubles, doubles, doubledFor.Seconds(), atEnd,
				sec(suite.Percentile(api, 50)), sec(suite.Percentile(api, 100)), apiFailed)
		}
	}
	tw.Flush()
	sb.WriteString("failover: from the fault to the first ARP reply from another MAC (probes every 10 ms); p99 is the nearest rank (with fewer than 100 trials, the max); " +
		"longest doubles: from the first to the last probe answered by two MACs in one trial; " +
		"doubles until the end: trials still answered by two MACs when the watch stopped, 1 s after the takeover (the doubles go on until the owner is restored); kubectl: `kubectl get nodes` through the VIP every 50 ms (client-go, 2 s timeout)\n")
	return sb.String()
}

// sec formats seconds, "-" for none (no trial took over).
func sec(s float64) string {
	if s != s { // NaN
		return "-"
	}
	return fmt.Sprintf("%.3f", s)
}
