package l2

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/arpwatch"
	"github.com/heraldlb/herald/test/suite"
)

// BenchmarkFailover with BENCH_L2_FAILOVER_SERVICES=N (N > 1) announces N
// Services, each with its own VIP, and measures per trial how long it takes
// until every VIP the faulted owner answered for is answered by another
// node.

const (
	// failoverPoolCIDR backs those Services: each asks for its own address.
	failoverPoolCIDR = "198.18.136.0/21"
	failoverPoolName = prefix + "failover-pool"
	// sweepInterval: the client asks for each of the owner's VIPs once per
	// sweep; the per-VIP times are that precise.
	sweepInterval = 50 * time.Millisecond
)

// manyTrial is the outcome of one trial with many Services.
type manyTrial struct {
	victim *node
	owned  int             // VIPs the victim answered for
	perVIP []time.Duration // for each of them: t0 to the first reply of another node
	// written: for each of them, t0 to the acquireTime of the Lease
	// naming its new holder (written by the new holder after it answers:
	// the takeover record is what it waits for).
	written []time.Duration
	// From the survivors' logs, relative to t0: when the first declared
	// the victim dead, when each takeover's Lease write returned (by the
	// group's Lease), when each VIP went into a responder (after its
	// conflict probe).
	dead             time.Duration
	recorded         []time.Duration // each takeover record of the victim's term written
	landed           []time.Duration
	programmed       []time.Duration
	missing          int // VIPs nobody else answered before the deadline
	requests         int
	windows, doubles int
}

func (r manyTrial) last() time.Duration {
	if len(r.perVIP) == 0 {
		return 0
	}
	return slices.Max(r.perVIP)
}

// createServicesWithIPs creates n Services in the benchmark's namespace,
// each asking for its own address of failoverPoolCIDR, and waits until all
// have it. It returns the Services' names by VIP.
func (bn *benchNS) createServicesWithIPs(n int, settleTimeout time.Duration) map[netip.Addr]string {
	b := bn.b
	b.Helper()
	ctx := context.Background()
	block := netip.MustParsePrefix(failoverPoolCIDR)
	if n > 1<<(32-block.Bits())-2 {
		b.Fatalf("%d Services do not fit in %s", n, failoverPoolCIDR)
	}
	pools := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	createPool(b, failoverPoolName, bn.ns, failoverPoolCIDR)
	// Registered after the namespace's cleanup, so it runs before it.
	b.Cleanup(func() {
		bn.cleanup()
		if err := pools.Delete(ctx, failoverPoolName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.Errorf("deleting pool %s: %v", failoverPoolName, err)
		}
	})
	var svcs []*corev1.Service
	addr := block.Addr()
	for i := range n {
		addr = addr.Next()
		svcs = append(svcs, bn.service(fmt.Sprintf("fo-%04d", i), nil, map[string]string{tables.AnnotationIPs: addr.String()}))
	}
	bn.createAll(ctx, svcs)
	names := map[netip.Addr]string{}
	deadline := time.Now().Add(settleTimeout)
	for len(names) < n {
		if time.Now().After(deadline) {
			b.Fatalf("after %s, %d of %d Services have an address of %s%s", settleTimeout, len(names), n, failoverPoolCIDR, deadAgents())
		}
		time.Sleep(time.Second)
		list, err := kube.CoreV1().Services(bn.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for i := range list.Items {
			if a, ok := ingressIP(&list.Items[i], block); ok {
				names[a] = list.Items[i].Name
			}
		}
	}
	return names
}

// waitBalanced waits until all three agents run and every VIP is in
// exactly one responder, no node's more than its share, and returns the
// VIPs of each node. The share is placement's balance under the members
// election; the Lease election does not balance (the first node to write
// a Lease keeps it, and a node that comes back takes nothing back), so
// there any node may hold them all.
func waitBalanced(b *testing.B, vips map[netip.Addr]string, election string, settleTimeout time.Duration) map[*node][]netip.Addr {
	b.Helper()
	share := (len(vips) + len(nodes) - 1) / len(nodes)
	if election == "lease" {
		share = len(vips)
	}
	deadline := time.Now().Add(settleTimeout)
	for {
		owners := responderOwners(b)
		byNode := map[*node][]netip.Addr{}
		unowned, doubled := 0, 0
		for vip := range vips {
			switch o := owners[vip]; len(o) {
			case 0:
				unowned++
			case 1:
				n := nodeNamed(o[0])
				byNode[n] = append(byNode[n], vip)
			default:
				doubled++
			}
		}
		balanced := unowned == 0 && doubled == 0
		var counts []string
		for _, n := range nodes {
			balanced = balanced && n.Running() && len(byNode[n]) <= share
			counts = append(counts, fmt.Sprintf("%s %d", n.Name, len(byNode[n])))
		}
		if balanced {
			return byNode
		}
		if time.Now().After(deadline) {
			b.Fatalf("after %s: %d VIPs in no responder, %d in two, per node %s (share %d)%s",
				settleTimeout, unowned, doubled, strings.Join(counts, ", "), share, deadAgents())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func benchFailoverMany(b *testing.B, st failoverSetting, trials, n int) {
	lt := st.lt
	settleTimeout := envDuration(b, "BENCH_L2_SETTLE_TIMEOUT", 5*time.Minute)
	ensureAgents(b)
	// BENCH_L2_AGENT_ARGS: more agent flags, e.g. a higher client rate
	// limit, to see what the takeover's Lease writes wait for.
	withTimings(b, lt, append([]string{"--l2-announcements-election=" + st.election}, strings.Fields(os.Getenv("BENCH_L2_AGENT_ARGS"))...)...)
	bn := newBenchNS(b)
	start := time.Now()
	vips := bn.createServicesWithIPs(n, settleTimeout)
	suite.Say(b, "%d Services in %s have their VIPs (%s)", n, bn.ns, time.Since(start).Round(time.Second))
	start = time.Now()
	bn.setPolicy()
	waitBalanced(b, vips, st.election, settleTimeout)
	suite.Say(b, "announced: every VIP in exactly one responder, balanced (%s)", time.Since(start).Round(time.Second))

	var results []manyTrial
	for i := 1; i <= trials; i++ {
		ensureAgents(b)
		byNode := waitBalanced(b, vips, st.election, settleTimeout)
		// The busiest node, the first of them from trial i's node on.
		var victim *node
		for k := range nodes {
			c := nodes[(i+k)%len(nodes)]
			if victim == nil || len(byNode[c]) > len(byNode[victim]) {
				victim = c
			}
		}
		r := runManyTrial(b, bn.ns, vips, byNode[victim], victim, st, settleTimeout)
		results = append(results, r)
		sorted := slices.Clone(r.perVIP)
		slices.Sort(sorted)
		suite.Say(b, "trial %2d/%d: %s %s (%d VIPs): first %.3f s, p50 %.3f s, last %.3f s, %d never answered; %d requests, %d double answers",
			i, trials, st.fault.name, victim.Name, r.owned, suite.Percentile(secs(sorted), 0), suite.Percentile(secs(sorted), 50),
			r.last().Seconds(), r.missing, r.requests, r.doubles)
	}
	ensureAgents(b)
	reportFailoverMany(b, st, n, results)
}

// runManyTrial does the fault to victim while the client asks for each of
// its VIPs once per sweepInterval, measures until every one is answered by
// another node, undoes the fault and keeps asking until the VIPs are
// balanced again (the handovers to the node that came back).
func runManyTrial(b *testing.B, ns string, names map[netip.Addr]string, owned []netip.Addr, victim *node, st failoverSetting, settleTimeout time.Duration) manyTrial {
	b.Helper()
	lt, f := st.lt, st.fault
	r := manyTrial{victim: victim, owned: len(owned)}
	isOwned := map[netip.Addr]bool{}
	for _, vip := range owned {
		isOwned[vip] = true
	}
	start := client.Mark()
	marks := map[netip.Addr][]int{}
	quit, done := make(chan struct{}), make(chan error, 1)
	go func() {
		tick := time.NewTicker(sweepInterval)
		defer tick.Stop()
		for {
			for _, vip := range owned {
				m := client.Mark()
				if err := client.Request(vip); err != nil {
					done <- err
					return
				}
				marks[vip] = append(marks[vip], m)
			}
			select {
			case <-quit:
				done <- nil
				return
			case <-tick.C:
			}
		}
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(quit)
			if err := <-done; err != nil {
				b.Fatalf("asking for the VIPs: %v", err)
			}
		}
	}
	defer stop()
	time.Sleep(4 * sweepInterval) // a few answers of the owner first

	logs := logMarks()
	t0 := time.Now()
	f.apply(b, victim)
	first := map[netip.Addr]time.Time{}
	deadline := t0.Add(4*lt.duration + timeout)
	for pos := start; len(first) < len(owned) && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		frames, err := client.Since(pos)
		if err != nil {
			b.Fatalf("capture stopped: %v", err)
		}
		for _, fr := range frames {
			pos = fr.Seq + 1
			if isOwned[fr.SPA] && client.IsReply(fr, fr.SPA) && fr.At.After(t0) && !slices.Equal(fr.SHA, victim.host.MAC) {
				if _, ok := first[fr.SPA]; !ok {
					first[fr.SPA] = fr.At
				}
			}
		}
	}
	for _, at := range first {
		r.perVIP = append(r.perVIP, at.Sub(t0))
	}
	r.missing = len(owned) - len(first)
	// When the new holders' Leases were written.
	if list, err := kube.CoordinationV1().Leases(leaseNS).List(context.Background(), metav1.ListOptions{}); err == nil {
		acquired := map[string]time.Time{}
		for i := range list.Items {
			if l := &list.Items[i]; l.Spec.AcquireTime != nil && holderOf(l) != victim.Name {
				acquired[l.Name] = l.Spec.AcquireTime.Time
			}
		}
		for _, vip := range owned {
			if at, ok := acquired[leaseName(ns, names[vip])]; ok && at.After(t0) {
				r.written = append(r.written, at.Sub(t0))
			}
		}
	}

	r.dead, r.recorded, r.landed, r.programmed = takeoverSteps(logs, victim, t0, ns, names, owned)

	// Keep asking while the fault is undone and the node that came back
	// gets its share again: that is when two nodes could answer at once.
	time.Sleep(500 * time.Millisecond)
	f.recover(b, victim)
	must(b, victim.waitReady())
	waitBalanced(b, names, st.election, settleTimeout)
	stop()
	time.Sleep(arpwatch.ProbeWindow) // the last replies
	frames, err := client.Since(start)
	if err != nil {
		b.Fatalf("capture stopped: %v", err)
	}
	byVIP := map[netip.Addr][]arpwatch.ARPFrame{}
	for _, fr := range frames {
		if isOwned[fr.SPA] {
			byVIP[fr.SPA] = append(byVIP[fr.SPA], fr)
		}
	}
	for _, vip := range owned {
		w, doubles := client.DoubleAnswers(byVIP[vip], vip, marks[vip])
		r.windows += w
		r.doubles += len(doubles)
		for _, d := range doubles {
			suite.Say(b, "%s: %s", vip, d)
		}
		r.requests += len(marks[vip])
	}
	return r
}

// takeoverSteps reads the survivors' logs since marks for the steps of the
// takeover of owned, relative to t0.
func takeoverSteps(marks map[*node]agentproc.LogMark, victim *node, t0 time.Time, ns string, names map[netip.Addr]string, owned []netip.Addr) (dead time.Duration, recorded, landed, programmed []time.Duration) {
	leaseOf, isOwned := map[string]bool{}, map[string]bool{}
	for _, vip := range owned {
		leaseOf[leaseName(ns, names[vip])] = true
		isOwned[vip.String()] = true
	}
	dead = -1
	for _, n := range nodes {
		if n == victim {
			continue
		}
		for _, line := range strings.Split(n.LogsSince(marks[n]), "\n") {
			kv := logfmt(line)
			at, err := time.Parse(time.RFC3339Nano, kv["time"])
			if err != nil || at.Before(t0) {
				continue
			}
			d := at.Sub(t0)
			switch {
			case kv["msg"] == "Member changed state" && kv["member"] == victim.Name && kv["state"] == tables.MemberDead:
				if dead < 0 || d < dead {
					dead = d
				}
			case kv["msg"] == "Takeover record written" && strings.HasPrefix(kv["from"], victim.Name+"/"):
				recorded = append(recorded, d)
			case kv["msg"] == "Announcement lease written" && leaseOf[kv["lease"]] && kv["holder"] == n.Name:
				landed = append(landed, d)
			case kv["msg"] == "Announcing" && isOwned[kv["ip"]]:
				programmed = append(programmed, d)
			}
		}
	}
	return dead, recorded, landed, programmed
}

// logfmt splits a log line of the agent's text handler into its keys and
// values (quoted values unquoted).
func logfmt(line string) map[string]string {
	kv := map[string]string{}
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		k, rest, ok := strings.Cut(line, "=")
		if !ok {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			v, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		kv[k] = v
		line = rest
	}
	return kv
}

func secs(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

func reportFailoverMany(b *testing.B, st failoverSetting, n int, results []manyTrial) {
	var lasts, all, written, deaths, recorded, landed, programmed []time.Duration
	doubles, windows, missing := 0, 0, 0
	for _, r := range results {
		lasts = append(lasts, r.last())
		all = append(all, r.perVIP...)
		written = append(written, r.written...)
		if r.dead >= 0 {
			deaths = append(deaths, r.dead)
		}
		recorded = append(recorded, r.recorded...)
		landed = append(landed, r.landed...)
		programmed = append(programmed, r.programmed...)
		doubles += r.doubles
		windows += r.windows
		missing += r.missing
	}
	slices.Sort(lasts)
	slices.Sort(all)
	slices.Sort(written)
	l, a, w := secs(lasts), secs(all), secs(written)
	pct := func(s []float64, p float64) float64 { return suite.Percentile(s, p) }

	b.ReportMetric(0, "ns/op")
	b.ReportMetric(pct(l, 50), "last-p50-s")
	b.ReportMetric(pct(l, 99), "last-p99-s")
	b.ReportMetric(pct(a, 50), "vip-p50-s")
	b.ReportMetric(pct(a, 99), "vip-p99-s")
	b.ReportMetric(float64(doubles), "double-answers")
	b.ReportMetric(float64(missing), "never-answered")
	b.ReportMetric(float64(len(results)), "trials")

	var sb strings.Builder
	fmt.Fprintf(&sb, "failover %s with %d Services (%s election, %s; fault: %s), %d trials, each VIP of the owner asked for every %s:\n",
		st.name, n, st.election, st.lt, st.fault.name, len(results), sweepInterval)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trial\tfaulted\tVIPs\tfirst (s)\tp50 (s)\tp99 (s)\tlast (s)\tnever answered\tLease written p50 (s)\tlast Lease written (s)\trequests\tdouble answers\t")
	for i, r := range results {
		v, wr := slices.Clone(r.perVIP), slices.Clone(r.written)
		slices.Sort(v)
		slices.Sort(wr)
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%.3f\t%.3f\t%d\t%d\t\n", i+1, r.victim.Name, r.owned,
			pct(secs(v), 0), pct(secs(v), 50), pct(secs(v), 99), r.last().Seconds(), r.missing,
			pct(secs(wr), 50), pct(secs(wr), 100), r.requests, r.doubles)
	}
	_ = tw.Flush()
	fmt.Fprintf(&sb, "last VIP of a trial: p50 %.3f s, p99 %.3f s, min %.3f s, max %.3f s (nearest rank over %d trials)\n",
		pct(l, 50), pct(l, 99), pct(l, 0), pct(l, 100), len(l))
	fmt.Fprintf(&sb, "every VIP of every trial (%d): p10 %.3f s, p50 %.3f s, p90 %.3f s, p99 %.3f s, max %.3f s\n",
		len(a), pct(a, 10), pct(a, 50), pct(a, 90), pct(a, 99), pct(a, 100))
	fmt.Fprintf(&sb, "Lease written (acquireTime - t0) for %d of them: p10 %.3f s, p50 %.3f s, p90 %.3f s, max %.3f s\n",
		len(w), pct(w, 10), pct(w, 50), pct(w, 90), pct(w, 100))
	slices.Sort(deaths)
	slices.Sort(recorded)
	slices.Sort(landed)
	slices.Sort(programmed)
	for _, step := range []struct {
		what string
		ds   []time.Duration
	}{
		{"the victim declared dead (first survivor's log)", deaths},
		{"takeover record of the victim written (\"Takeover record written\", every survivor that won a write)", recorded},
		{"Lease write returned (\"Announcement lease written\"; after a takeover record, off the critical path)", landed},
		{"VIP in the new owner's responder, after its conflict probe (\"Announcing\")", programmed},
	} {
		x := secs(step.ds)
		if len(x) == 0 {
			continue // a step of the other election (the Lease election writes no takeover record)
		}
		fmt.Fprintf(&sb, "%s, %d: p10 %.3f s, p50 %.3f s, p90 %.3f s, max %.3f s\n", step.what, len(x), pct(x, 10), pct(x, 50), pct(x, 90), pct(x, 100))
	}
	fmt.Fprintf(&sb, "never answered by another node: %d; double answers (two MACs replying to one request): %d in %d request windows",
		missing, doubles, windows)
	suite.Say(b, "%s", sb.String())
}
