package l2

// Benchmarks of L2 announcements on the test LAN of TestMain (three agents,
// an ARP client, a real kube-apiserver):
//
//   - BenchmarkFailover: how long the LAN goes unanswered when the owner of
//     a VIP is killed (kill -9), with the default Lease timings and with
//     tuned ones;
//   - BenchmarkLeaseAPILoad: the Lease traffic the agents put on the API
//     server for 100 and 1000 announced Services, with the harness's tuned
//     timings and with the default ones.
//
// They are benchmarks, not tests: `go test` runs them only with -bench, and
// they assert nothing about time. Each runs its experiment once, whatever
// b.N (run them with -benchtime 1x), reports its figures with ReportMetric
// (ns/op is suppressed: it would only be the experiment's wall time) and
// prints a readable table on stdout (see suite.Say). hack/bench-l2.sh runs them:
//
//	go test -run '^$' -bench 'BenchmarkFailover|BenchmarkLeaseAPILoad' -benchtime 1x -timeout 90m ./test/l2/
//
// Knobs (environment):
//
//	BENCH_L2_TRIALS           failover trials per timing (20)
//	BENCH_L2_FAILOVER_SERVICES  Services announced in BenchmarkFailover (1)
//	BENCH_L2_AGENT_ARGS       more agent flags for it, with more than one Service
//	BENCH_L2_SERVICES         Service counts of BenchmarkLeaseAPILoad (100,1000)
//	BENCH_L2_WINDOW           its measurement window (30s)
//	BENCH_L2_SETTLE_TIMEOUT   how long it waits for IPs and Lease holders (5m)
//
// Both change the agents' Lease timings by restarting them with the timing
// flags appended (the last occurrence of a flag wins), and restart them with
// the harness's usual timings afterwards.

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/suite"
)

// leaseTimings are the agents' --l2-announcements-* Lease timings.
type leaseTimings struct {
	name                   string
	duration, renew, retry time.Duration
}

var (
	// The defaults of the agent and of the spec.
	defaultTimings = leaseTimings{"default", 15 * time.Second, 5 * time.Second, 2 * time.Second}
	// Tuned for fast failover (BenchmarkFailover).
	fastTimings = leaseTimings{"tuned", 2 * time.Second, time.Second, 200 * time.Millisecond}
	// What the harness runs the agents with (BenchmarkLeaseAPILoad).
	harnessTimings = leaseTimings{"tuned", leaseDuration, renewDeadline, retryPeriod}
)

func (lt leaseTimings) args() []string {
	return []string{
		"--l2-announcements-lease-duration", lt.duration.String(),
		"--l2-announcements-renew-deadline", lt.renew.String(),
		"--l2-announcements-retry-period", lt.retry.String(),
	}
}

func (lt leaseTimings) String() string {
	return fmt.Sprintf("lease duration %s, renew deadline %s, retry period %s", lt.duration, lt.renew, lt.retry)
}

// withTimings restarts the three agents with the timings lt, and with
// their usual command line again when the benchmark ends.
func withTimings(b *testing.B, lt leaseTimings, extra ...string) {
	b.Helper()
	saved := map[*node][]string{}
	for _, n := range nodes {
		saved[n] = n.ExtraArgs()
	}
	b.Cleanup(func() {
		if err := restartAgents(func(n *node) []string { return saved[n] }); err != nil {
			b.Errorf("restoring the agents' usual timings: %v", err)
		}
	})
	if err := restartAgents(func(n *node) []string { return append(append(slices.Clone(saved[n]), lt.args()...), extra...) }); err != nil {
		b.Fatal(err)
	}
	suite.Say(b, "agents restarted with %s %s", lt, strings.Join(extra, " "))
}

// restartAgents stops the three agents (SIGTERM: they release their
// Leases), then starts them with the extra arguments args(n) and waits
// until they are ready.
func restartAgents(args func(*node) []string) error {
	for _, n := range nodes {
		if err := n.Stop(); err != nil {
			return err
		}
	}
	for _, n := range nodes {
		n.SetExtraArgs(args(n)...)
		if err := n.Start(); err != nil {
			return err
		}
	}
	for _, n := range nodes {
		if err := n.waitReady(); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Environment knobs
// ---------------------------------------------------------------------------

func envInts(b *testing.B, key string, def []int) []int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i < 1 {
			b.Fatalf("%s=%q: want positive integers separated by commas", key, v)
		}
		out = append(out, i)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func envDuration(b *testing.B, key string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive duration", key, v)
	}
	return d
}

// ---------------------------------------------------------------------------
// A benchmark's namespace, policy and Services
// ---------------------------------------------------------------------------

// benchNS is a namespace of the benchmark, with its Services and at most one
// L2 announcement policy; all are deleted when the benchmark ends.
type benchNS struct {
	b      *testing.B
	ns     string
	policy string
}

func newBenchNS(b *testing.B) *benchNS {
	b.Helper()
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatalf("creating namespace: %v", err)
	}
	bn := &benchNS{b: b, ns: ns.Name}
	b.Cleanup(bn.cleanup)
	return bn
}

func (bn *benchNS) cleanup() {
	ctx := context.Background()
	bn.deletePolicy()
	svcs := kube.CoreV1().Services(bn.ns)
	if list, err := svcs.List(ctx, metav1.ListOptions{}); err == nil {
		names := make([]string, 0, len(list.Items))
		for _, svc := range list.Items {
			names = append(names, svc.Name)
		}
		parallel(names, func(name string) {
			if err := svcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				bn.b.Errorf("deleting service %s/%s: %v", bn.ns, name, err)
			}
		})
	}
	// Without kube-controller-manager the namespace stays Terminating.
	_ = kube.CoreV1().Namespaces().Delete(ctx, bn.ns, metav1.DeleteOptions{})
}

// setPolicy creates or replaces the namespace's policy: announce the
// LoadBalancer IPs of the Services labelled testLabel=<ns> (and matching
// extra, if given) on ^eth[0-9]+ of every node.
func (bn *benchNS) setPolicy(extra ...metav1.LabelSelectorRequirement) {
	bn.b.Helper()
	spec := v2alpha1.CiliumL2AnnouncementPolicySpec{
		ServiceSelector: &metav1.LabelSelector{
			MatchLabels:      map[string]string{testLabel: bn.ns},
			MatchExpressions: extra,
		},
		Interfaces:      []string{"^eth[0-9]+"},
		LoadBalancerIPs: true,
	}
	policies := herald.CiliumV2alpha1().CiliumL2AnnouncementPolicies()
	ctx := context.Background()
	if bn.policy == "" {
		p := &v2alpha1.CiliumL2AnnouncementPolicy{ObjectMeta: metav1.ObjectMeta{Name: bn.ns + "-bench"}, Spec: spec}
		if _, err := policies.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			bn.b.Fatalf("creating policy %s: %v", p.Name, err)
		}
		bn.policy = p.Name
		return
	}
	p, err := policies.Get(ctx, bn.policy, metav1.GetOptions{})
	if err != nil {
		bn.b.Fatalf("getting policy %s: %v", bn.policy, err)
	}
	p.Spec = spec
	if _, err := policies.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		bn.b.Fatalf("updating policy %s: %v", bn.policy, err)
	}
}

func (bn *benchNS) deletePolicy() {
	if bn.policy == "" {
		return
	}
	err := herald.CiliumV2alpha1().CiliumL2AnnouncementPolicies().Delete(context.Background(), bn.policy, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		bn.b.Errorf("deleting policy %s: %v", bn.policy, err)
	}
	bn.policy = ""
}

// service is a LoadBalancer Service of the benchmark, labelled for its
// policy.
func (bn *benchNS) service(name string, labels, annotations map[string]string) *corev1.Service {
	noNodePorts := false
	l := map[string]string{testLabel: bn.ns}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: annotations},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			AllocateLoadBalancerNodePorts: &noNodePorts,
			Ports:                         []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
}

// ingressIP returns the Service's first IPv4 ingress address within pool.
func ingressIP(svc *corev1.Service, pool netip.Prefix) (netip.Addr, bool) {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && a.Is4() && pool.Contains(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// createAll creates svcs in the namespace, 16 at a time, and stops the
// benchmark if any of them could not be created.
func (bn *benchNS) createAll(ctx context.Context, svcs []*corev1.Service) {
	bn.b.Helper()
	var mu sync.Mutex
	var errs []error
	parallel(svcs, func(svc *corev1.Service) {
		if _, err := kube.CoreV1().Services(bn.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	if len(errs) > 0 {
		bn.b.Fatalf("creating %d Services: %d failed, first: %v", len(svcs), len(errs), errs[0])
	}
}

// parallel runs f on every item, 16 at a time.
func parallel[T any](items []T, f func(T)) {
	const workers = 16
	ch := make(chan T)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				f(it)
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
}

func nodeByMAC(mac net.HardwareAddr) *node {
	for _, n := range nodes {
		if slices.Equal(n.host.MAC, mac) {
			return n
		}
	}
	return nil
}

func nodeName(n *node) string {
	if n == nil {
		return "?"
	}
	return n.Name
}

// ---------------------------------------------------------------------------
// BenchmarkFailover
// ---------------------------------------------------------------------------

// proberInterval is how often the client asks for the VIP during a trial.
const proberInterval = 20 * time.Millisecond

// BenchmarkFailover measures how long a VIP goes unanswered when its
// owner's agent is killed with SIGKILL: no cleanup, its Lease stays held
// until it expires and another node takes it.
//
// For each timing (sub-benchmarks default: 15s/5s/2s, tuned: 2s/1s/200ms)
// the agents are restarted with those timings and one announced Service is
// created; then each of BENCH_L2_TRIALS (20) trials
//
//   - waits until all three agents are ready and the VIP is answered by
//     exactly one node (the owner);
//   - has the client ask who has the VIP every 20 ms;
//   - does the fault to the owner at t0 (kill -9 of its agent, SIGSTOP, or
//     a partition) and takes t1, the capture time of the first reply from
//     another node's MAC: the failover time is t1 - t0;
//   - undoes the fault (restarts, thaws, heals) while still asking, and
//     keeps asking 1.5 s more.
//
// It reports the p50, p99 (nearest rank: with 20 trials, the maximum), min
// and max failover times in seconds, and the number of "double answers":
// request windows (from one request of the prober to the next) in which
// two different MACs replied, which must never happen.
//
// With BENCH_L2_FAILOVER_SERVICES=N (N > 1), N Services are announced
// instead of one, and each trial faults the node with the most of them and
// measures, for each of its VIPs, until another node answers
// (benchFailoverMany).
func BenchmarkFailover(b *testing.B) {
	trials := suite.EnvInt(b, "BENCH_L2_TRIALS", 20)
	services := suite.EnvInt(b, "BENCH_L2_FAILOVER_SERVICES", 1)
	for _, st := range failoverSettings {
		b.Run(st.name, func(b *testing.B) {
			if services > 1 {
				benchFailoverMany(b, st, trials, services)
				return
			}
			benchFailover(b, st, trials)
		})
	}
}

// failoverSetting is one row of BenchmarkFailover: an election, its
// timings, and the fault done to the owner.
type failoverSetting struct {
	name     string
	lt       leaseTimings
	election string
	fault    fault
	// twoNodes: node3's agent is stopped and its node Lease deleted, the
	// faults are done to one of the other two.
	twoNodes bool
}

// fault is what a trial does to the owner, and how it is undone after it.
type fault struct {
	name    string
	apply   func(testing.TB, *node)
	recover func(testing.TB, *node)
}

var (
	kill9 = fault{"kill -9",
		func(tb testing.TB, n *node) { must(tb, n.Kill9()) },
		func(tb testing.TB, n *node) { must(tb, n.Start()) }}
	sigstop = fault{"SIGSTOP",
		func(tb testing.TB, n *node) { must(tb, n.Freeze()) },
		func(tb testing.TB, n *node) { must(tb, n.Thaw()) }}
	// cutOff drops the owner's traffic to and from the other nodes and the
	// API server (ARP still flows: the owner's responder must fall silent
	// by itself).
	healers = map[*node]func(){}
	cutOff  = fault{"partition",
		func(tb testing.TB, n *node) { healers[n] = partition(tb, n) },
		func(tb testing.TB, n *node) { healers[n]() }}

	failoverSettings = []failoverSetting{
		{"lease/default/kill", defaultTimings, "lease", kill9, false},
		{"lease/tuned/kill", fastTimings, "lease", kill9, false},
		{"members/default/kill", defaultTimings, "members", kill9, false},
		{"members/default/sigstop", defaultTimings, "members", sigstop, false},
		{"members/default/partition", defaultTimings, "members", cutOff, false},
		{"members/twonode/kill", defaultTimings, "members", kill9, true},
		{"members/twonode/sigstop", defaultTimings, "members", sigstop, true},
		{"members/twonode/partition", defaultTimings, "members", cutOff, true},
	}
)

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// failoverTrial is the outcome of one trial.
type failoverTrial struct {
	killed, tookOver *node
	failover         time.Duration // t1 - t0
	silence          time.Duration // from the killed node's last reply to t1
	acquired         time.Duration // from t0 to the new holder's acquireTime in the Lease (-1: unknown)
	// moved: the owner at the start is not the node that took over in the
	// previous trial: the Lease changed hands without a kill in between.
	moved            bool
	requests         int // requests sent by the prober (captured)
	windows, doubles int
}

func benchFailover(b *testing.B, st failoverSetting, trials int) {
	lt := st.lt
	ensureAgents(b)
	withTimings(b, lt, "--l2-announcements-election="+st.election)
	active := nodes
	if st.twoNodes {
		useTwoNodes(b)
		active = nodes[:2]
	}
	bn := newBenchNS(b)
	bn.setPolicy()
	if _, err := kube.CoreV1().Services(bn.ns).Create(context.Background(), bn.service("web", nil, nil), metav1.CreateOptions{}); err != nil {
		b.Fatalf("creating service: %v", err)
	}
	pool := netip.MustParsePrefix(poolCIDR)
	var vip netip.Addr
	waitFor(b, func() (bool, string) {
		svc, err := kube.CoreV1().Services(bn.ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		a, ok := ingressIP(svc, pool)
		vip = a
		return ok, fmt.Sprintf("service %s/web: ingress %v, want an address of %s", bn.ns, svc.Status.LoadBalancer.Ingress, poolCIDR)
	})
	lease := leaseName(bn.ns, "web")
	// The agents do run with the timings: the holder writes its lease
	// duration into the Lease (both elections do).
	waitFor(b, func() (bool, string) {
		l, err := kube.CoordinationV1().Leases(leaseNS).Get(context.Background(), lease, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		want := int32(lt.duration / time.Second)
		if holderOf(l) == "" || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != want {
			return false, fmt.Sprintf("Lease %s: holder %q, leaseDurationSeconds %v, want a holder and %d", lease, holderOf(l), l.Spec.LeaseDurationSeconds, want)
		}
		return true, ""
	})
	suite.Say(b, "service %s/web has VIP %s (Lease %s/%s)", bn.ns, vip, leaseNS, lease)

	// After a restart, give the agent time to campaign for the Lease before
	// the next kill, so that both survivors compete.
	settle := max(time.Second, 2*lt.retry)
	var results []failoverTrial
	for i := 1; i <= trials; i++ {
		marks := logMarks() // from the previous trial's restart on
		ensureRunning(b, active)
		time.Sleep(settle)
		owner := waitSingleOwner(b, vip, lease)
		r := runFailoverTrial(b, vip, lease, owner, lt, st.fault)
		r.moved = st.election == "lease" && len(results) > 0 && results[len(results)-1].tookOver != owner
		results = append(results, r)
		suite.Say(b, "trial %2d/%d: %s %s, %s answered after %.3f s (%d requests, %d double answers)",
			i, trials, st.fault.name, r.killed.Name, nodeName(r.tookOver), r.failover.Seconds(), r.requests, r.doubles)
		if r.moved || r.doubles > 0 {
			// Show why the Lease changed hands unasked.
			suite.Say(b, "trial %d: the agents' Lease log lines since the previous trial:\n%s", i, leaseLogLines(marks, lease))
		}
	}
	ensureRunning(b, active)
	reportFailover(b, st, results)
}

// waitSingleOwner waits until requests for vip get exactly one reply, from
// one of the nodes, several times in a row, and that node holds the Lease.
func waitSingleOwner(b *testing.B, vip netip.Addr, lease string) *node {
	b.Helper()
	var owner *node
	streak := 0
	waitFor(b, func() (bool, string) {
		res := probe(b, vip)
		var n *node
		if len(res.Replies) == 1 {
			n = nodeByMAC(res.Replies[0].SHA)
		}
		if n == nil || n != owner {
			owner, streak = n, 0
			if n == nil {
				return false, fmt.Sprintf("want exactly one reply, from a node; %s", res)
			}
		}
		streak++
		if streak < confirmations {
			return false, fmt.Sprintf("%s answered alone %d times in a row, want %d", n.Name, streak, confirmations)
		}
		l, err := kube.CoordinationV1().Leases(leaseNS).Get(context.Background(), lease, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if holderOf(l) != n.Name {
			streak = 0
			return false, fmt.Sprintf("%s answers, but Lease %s is held by %q", n.Name, lease, holderOf(l))
		}
		return true, ""
	})
	return owner
}

// leaseLogLines returns the lines of the agents' logs since marks that
// mention the Lease.
func leaseLogLines(marks map[*node]agentproc.LogMark, lease string) string {
	var out []string
	for _, n := range nodes {
		for _, line := range strings.Split(n.LogsSince(marks[n]), "\n") {
			if strings.Contains(line, lease) {
				out = append(out, n.Name+": "+line)
			}
		}
	}
	return agentproc.Tail(strings.Join(out, "\n"), 40)
}

// runFailoverTrial kills owner's agent while the client asks for vip every
// proberInterval, and measures until another node answers.
func runFailoverTrial(b *testing.B, vip netip.Addr, lease string, owner *node, lt leaseTimings, f fault) failoverTrial {
	b.Helper()
	start := client.Mark()
	prober := client.StartMarkedProber(vip, proberInterval)
	defer func() { _, _ = prober.Stop() }()
	time.Sleep(10 * proberInterval) // a few answers of the owner first

	t0 := time.Now()
	f.apply(b, owner)
	r := failoverTrial{killed: owner}
	deadline := t0.Add(4*lt.duration + timeout)
	var t1 time.Time
	for pos := start; t1.IsZero(); {
		frames, err := client.Since(pos)
		if err != nil {
			b.Fatalf("capture stopped: %v", err)
		}
		for _, f := range frames {
			pos = f.Seq + 1
			if client.IsReply(f, vip) && f.At.After(t0) && !slices.Equal(f.SHA, owner.host.MAC) {
				t1, r.tookOver = f.At, nodeByMAC(f.SHA)
				break
			}
		}
		if t1.IsZero() {
			if time.Now().After(deadline) {
				b.Fatalf("no other node answered for %s within %s of killing %s:\n%s%s",
					vip, time.Since(t0).Round(time.Millisecond), owner.Name, dumpState([]netip.Addr{vip}, start), deadAgents())
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	r.failover = t1.Sub(t0)
	r.acquired = -1
	if l, err := kube.CoordinationV1().Leases(leaseNS).Get(context.Background(), lease, metav1.GetOptions{}); err == nil &&
		r.tookOver != nil && holderOf(l) == r.tookOver.Name && l.Spec.AcquireTime != nil {
		r.acquired = l.Spec.AcquireTime.Sub(t0)
	}

	// Keep asking a little after the takeover, and while the fault is
	// undone (the agent restarted, thawed, the partition healed): that is
	// when two nodes could answer at once.
	time.Sleep(500 * time.Millisecond)
	f.recover(b, owner)
	time.Sleep(1500 * time.Millisecond)
	marks, frames, err := prober.Finish(start)
	if err != nil {
		b.Fatal(err)
	}
	var lastOld time.Time
	for _, f := range frames {
		if client.IsReply(f, vip) && slices.Equal(f.SHA, owner.host.MAC) && f.At.Before(t1) {
			lastOld = f.At
		}
	}
	if !lastOld.IsZero() {
		r.silence = t1.Sub(lastOld)
	}
	r.requests = len(marks)
	var doubles []string
	r.windows, doubles = client.DoubleAnswers(frames, vip, marks)
	for _, d := range doubles {
		suite.Say(b, "%s", d)
	}
	r.doubles = len(doubles)
	return r
}

func reportFailover(b *testing.B, st failoverSetting, results []failoverTrial) {
	lt := st.lt
	secs := make([]float64, 0, len(results))
	doubles, windows, moved := 0, 0, 0
	for _, r := range results {
		secs = append(secs, r.failover.Seconds())
		doubles += r.doubles
		windows += r.windows
		if r.moved {
			moved++
		}
	}
	sorted := slices.Clone(secs)
	slices.Sort(sorted)
	p50, p99 := suite.Percentile(sorted, 50), suite.Percentile(sorted, 99)
	lo, hi := sorted[0], sorted[len(sorted)-1]

	b.ReportMetric(0, "ns/op")
	b.ReportMetric(p50, "p50-s")
	b.ReportMetric(p99, "p99-s")
	b.ReportMetric(lo, "min-s")
	b.ReportMetric(hi, "max-s")
	b.ReportMetric(float64(doubles), "double-answers")
	b.ReportMetric(float64(len(results)), "trials")
	b.ReportMetric(float64(moved), "unforced-handovers")

	var sb strings.Builder
	fmt.Fprintf(&sb, "failover %s (%s election, %s; fault: %s), %d trials, ARP request every %s:\n", st.name, st.election, lt, st.fault.name, len(results), proberInterval)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trial\tkilled\towner moved\ttook over\tt1-t0 (s)\tunanswered (s)\tLease acquired (s)\trequests\tdouble answers\t")
	for i, r := range results {
		acq := "?"
		if r.acquired != -1 {
			acq = fmt.Sprintf("%.3f", r.acquired.Seconds())
		}
		mv := ""
		if r.moved {
			mv = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.3f\t%.3f\t%s\t%d\t%d\t\n", i+1, r.killed.Name, mv, nodeName(r.tookOver), r.failover.Seconds(), r.silence.Seconds(), acq, r.requests, r.doubles)
	}
	_ = tw.Flush()
	p99note := ""
	if len(sorted) < 100 {
		p99note = fmt.Sprintf(" (nearest rank: with %d trials p99 is the max)", len(sorted))
	}
	fmt.Fprintf(&sb, "p50 %.3f s, p99 %.3f s%s, min %.3f s, max %.3f s\n", p50, p99, p99note, lo, hi)
	if st.election == "lease" {
		fmt.Fprintf(&sb, "spec's theoretical range: %s (leaseDuration-renewDeadline) to %s (leaseDuration+renewDeadline)\n",
			lt.duration-lt.renew, lt.duration+lt.renew)
	}
	fmt.Fprintf(&sb, "double answers (two MACs replying to one request): %d in %d request windows\n", doubles, windows)
	fmt.Fprintf(&sb, "unforced handovers (\"owner moved\": the Lease changed hands between trials, without a kill): %d\n", moved)
	fmt.Fprintf(&sb, "(\"unanswered\": from the killed node's last reply to t1; \"Lease acquired\": the new holder's acquireTime - t0)")
	suite.Say(b, "%s", sb.String())
}

// ---------------------------------------------------------------------------
// BenchmarkLeaseAPILoad
// ---------------------------------------------------------------------------

const (
	// loadPoolCIDR backs the Services of BenchmarkLeaseAPILoad; each
	// requests its own address from it (lbipam.cilium.io/ips), so the
	// harness's small pool stays untouched.
	loadPoolCIDR = "198.18.64.0/18"
	loadPoolName = prefix + "bench-pool"
	// batchLabel puts the Services in batches; the policy selects batches,
	// so that the Services have their IPs before they are announced.
	batchLabel = "hl2-bench-batch"
)

// BenchmarkLeaseAPILoad measures the Lease traffic of the agents for N
// announced LoadBalancer Services (BENCH_L2_SERVICES, 100 then 1000), with
// the harness's tuned timings (2s/1s/200ms) and with the default ones
// (15s/5s/2s).
//
// The Services are created once (allocateLoadBalancerNodePorts: false,
// each requesting an address of 198.18.64.0/18) and get their IPs while no
// policy selects them; then, for each timing, the agents are restarted with
// it, and, with no Service announced (services=0, the baseline: LB IPAM's
// Lease, the API server's own), then with the policy selecting N Services,
// once every one's Lease has a holder, it measures over BENCH_L2_WINDOW
// (30s):
//
//   - Lease writes: MODIFIED watch events on cilium-l2announce-* Leases
//     (each successful renewal or takeover is one), per holder
//     (holderIdentity of the event);
//   - the API server's apiserver_request_total{resource="leases"} by verb
//     (and code), scraped from /metrics before and after: reads (GET,
//     LIST, WATCH) and writes (PUT, POST, PATCH, DELETE) per second, in total
//     and per node (the total divided by 3: the counter does not say which
//     client sent a request);
//   - in the agents' logs: client-go's client-side throttling messages
//     (logged only when a request waited more than 1 s for the agent's
//     --k8s-client-qps, default 100, and at most once per 10 s per agent:
//     lease requests per node at about that rate show throttling better),
//     failed renewals and releases, and announcement Leases lost (the node
//     withdrew the VIP; it may take it back at once, with no holder change
//     seen on the Lease).
func BenchmarkLeaseAPILoad(b *testing.B) {
	counts := envInts(b, "BENCH_L2_SERVICES", []int{100, 1000})
	window := envDuration(b, "BENCH_L2_WINDOW", 30*time.Second)
	settleTimeout := envDuration(b, "BENCH_L2_SETTLE_TIMEOUT", 5*time.Minute)
	ensureAgents(b)
	ll := newLeaseLoad(b, counts, settleTimeout)

	var summary []loadResult
	for _, st := range []struct {
		lt       leaseTimings
		election string
	}{{harnessTimings, "lease"}, {defaultTimings, "lease"}, {defaultTimings, "members"}} {
		lt := st.lt
		lt.name = st.election + "/" + lt.name
		b.Run(lt.name, func(b *testing.B) {
			withTimings(b, lt, "--l2-announcements-election="+st.election)
			b.Cleanup(func() { ll.unannounce(b, lt) })
			b.Run("services=0", func(b *testing.B) {
				r := measureLeaseLoad(b, lt, 0, 0, window)
				summary = append(summary, r)
			})
			for k, n := range counts {
				b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
					marks := logMarks()
					ll.announce(b, k)
					held := ll.waitHeld(b, n, lt)
					r := measureLeaseLoad(b, lt, n, held, window)
					r.settle = countLogs(marks)
					summary = append(summary, r)
					suite.Say(b, "agents' logs since the policy selected them (settling and window): %s", r.settle)
				})
			}
		})
	}
	logLoadSummary(b, summary)
}

// leaseLoad holds the Services of BenchmarkLeaseAPILoad.
type leaseLoad struct {
	*benchNS
	counts        []int
	names         []string // Service names, in batch order
	settleTimeout time.Duration
}

func newLeaseLoad(b *testing.B, counts []int, settleTimeout time.Duration) *leaseLoad {
	b.Helper()
	ctx := context.Background()
	total := counts[len(counts)-1]
	poolPrefix := netip.MustParsePrefix(loadPoolCIDR)
	if total > 1<<(32-poolPrefix.Bits())-2 {
		b.Fatalf("%d Services do not fit in %s", total, loadPoolCIDR)
	}
	ll := &leaseLoad{benchNS: newBenchNS(b), counts: counts, settleTimeout: settleTimeout}

	pools := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	createPool(b, loadPoolName, ll.ns, loadPoolCIDR)
	// Registered after the namespace's cleanup, so it runs before it: the
	// pool goes after the Services, and the Leases after the pool.
	b.Cleanup(func() {
		ll.b = b
		ll.cleanup()
		if err := pools.Delete(ctx, loadPoolName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.Errorf("deleting pool %s: %v", loadPoolName, err)
		}
		ll.deleteLeases(b)
	})

	// Each Service asks for its own address: 198.18.64.1, .2, ...
	var svcs []*corev1.Service
	addr := poolPrefix.Addr().Next()
	for i := 0; i < total; i++ {
		batch := 0
		for i >= counts[batch] {
			batch++
		}
		name := fmt.Sprintf("lb-%04d", i)
		ll.names = append(ll.names, name)
		svcs = append(svcs, ll.service(name,
			map[string]string{batchLabel: strconv.Itoa(batch)},
			map[string]string{tables.AnnotationIPs: addr.String()}))
		addr = addr.Next()
	}
	start := time.Now()
	ll.createAll(ctx, svcs)
	// Wait for the IPs.
	deadline := time.Now().Add(settleTimeout)
	for {
		list, err := kube.CoreV1().Services(ll.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		withIP := 0
		for i := range list.Items {
			if _, ok := ingressIP(&list.Items[i], poolPrefix); ok {
				withIP++
			}
		}
		if withIP == total {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("after %s, %d of %d Services have an address of %s%s", settleTimeout, withIP, total, loadPoolCIDR, deadAgents())
		}
		time.Sleep(time.Second)
	}
	suite.Say(b, "%d LoadBalancer Services in %s have their IPs (%s), none announced yet", total, ll.ns, time.Since(start).Round(time.Second))
	return ll
}

// announce makes the policy select the batches 0..k, the first counts[k]
// Services.
func (ll *leaseLoad) announce(b *testing.B, k int) {
	b.Helper()
	ll.b = b
	var batches []string
	for i := 0; i <= k; i++ {
		batches = append(batches, strconv.Itoa(i))
	}
	ll.setPolicy(metav1.LabelSelectorRequirement{Key: batchLabel, Operator: metav1.LabelSelectorOpIn, Values: batches})
}

// unannounce deletes the policy, waits until the agents released the
// Leases, and deletes them, so that the next timing starts from scratch.
func (ll *leaseLoad) unannounce(b *testing.B, lt leaseTimings) {
	ll.b = b
	ll.deletePolicy()
	// A release is a write too, and may not get through a throttled client
	// in time: wait a while, not for ever.
	wait := min(ll.settleTimeout, 2*lt.duration+30*time.Second)
	deadline := time.Now().Add(wait)
	for {
		held, _, err := ll.holders()
		if err != nil {
			b.Error(err)
			return
		}
		if len(held) == 0 {
			break
		}
		if time.Now().After(deadline) {
			suite.Say(b, "%d Leases still held %s after the policy was deleted; deleting them anyway", len(held), wait)
			break
		}
		time.Sleep(time.Second)
	}
	ll.deleteLeases(b)
}

// holders returns the holder of each of the namespace's Leases that has one,
// and how many Leases there are.
func (ll *leaseLoad) holders() (map[string]string, int, error) {
	list, err := kube.CoordinationV1().Leases(leaseNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, 0, err
	}
	held := map[string]string{}
	n := 0
	for i := range list.Items {
		l := &list.Items[i]
		if !strings.HasPrefix(l.Name, leasePrefix+ll.ns+"-") {
			continue
		}
		n++
		if h := holderOf(l); h != "" {
			held[l.Name] = h
		}
	}
	return held, n, nil
}

func (ll *leaseLoad) deleteLeases(b *testing.B) {
	list, err := kube.CoordinationV1().Leases(leaseNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Error(err)
		return
	}
	var names []string
	for _, l := range list.Items {
		if strings.HasPrefix(l.Name, leasePrefix+ll.ns+"-") {
			names = append(names, l.Name)
		}
	}
	parallel(names, func(name string) {
		err := kube.CoordinationV1().Leases(leaseNS).Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			b.Errorf("deleting Lease %s: %v", name, err)
		}
	})
}

// waitHeld waits until the Leases of the first n Services all have a
// holder, for at most the settle timeout, and returns how many have one.
func (ll *leaseLoad) waitHeld(b *testing.B, n int, lt leaseTimings) int {
	b.Helper()
	want := map[string]bool{}
	for _, name := range ll.names[:n] {
		want[leaseName(ll.ns, name)] = true
	}
	start := time.Now()
	deadline := start.Add(ll.settleTimeout)
	lastLog := start
	for {
		held, _, err := ll.holders()
		if err != nil {
			b.Fatal(err)
		}
		count := 0
		for name := range held {
			if want[name] {
				count++
			}
		}
		if count == n {
			suite.Say(b, "all %d Leases have a holder after %s", n, time.Since(start).Round(100*time.Millisecond))
			// Let the takeovers of the start settle into renewals.
			time.Sleep(max(2*lt.duration, 5*time.Second))
			return count
		}
		if time.Now().After(deadline) {
			suite.Say(b, "after %s, %d of %d Leases have a holder; measuring anyway%s", ll.settleTimeout, count, n, deadAgents())
			return count
		}
		if time.Since(lastLog) >= 30*time.Second {
			suite.Say(b, "%d of %d Leases have a holder after %s", count, n, time.Since(start).Round(time.Second))
			lastLog = time.Now()
		}
		time.Sleep(time.Second)
	}
}

// loadResult is one measurement of BenchmarkLeaseAPILoad.
type loadResult struct {
	timing   leaseTimings
	services int
	held     int // Leases with a holder when the window started
	elapsed  time.Duration

	modified, added, deleted int            // watch events on cilium-l2announce-* Leases
	byHolder                 map[string]int // MODIFIED events by holderIdentity
	holderChanges            int            // MODIFIED events changing the holder
	requests                 map[string]float64
	reads, writes            float64
	logs                     logCounts // the agents' logs in the window
	settle                   logCounts // the agents' logs from the policy change on
}

var readVerbs = []string{"GET", "LIST", "WATCH", "WATCHLIST"}

// logMarks marks every agent's log.
func logMarks() map[*node]agentproc.LogMark {
	m := map[*node]agentproc.LogMark{}
	for _, n := range nodes {
		m[n] = n.Mark()
	}
	return m
}

// logCounts are counts of lines of the agents' logs, by node.
type logCounts struct {
	// client-go's "Waited before sending request ... client-side
	// throttling": logged only for a wait over 1 s, at most every 10 s.
	throttled map[string]int
	// The announcer's "Announcement lease API call failed" (a renewal or a
	// read failed; once per streak and Lease) and "Could not release
	// announcement lease".
	renewFailed, releaseFailed map[string]int
	// The announcer's "Lost announcement lease": another node wrote a
	// Lease this node held.
	lost map[string]int
}

func (c logCounts) String() string {
	return fmt.Sprintf("client-side throttling %d %v, failed to renew lease %d %v, failed to release %d %v, announcement leases lost %d %v",
		sum(c.throttled), c.throttled, sum(c.renewFailed), c.renewFailed, sum(c.releaseFailed), c.releaseFailed, sum(c.lost), c.lost)
}

// countLogs counts, by node, lines of the agents' logs since marks.
func countLogs(marks map[*node]agentproc.LogMark) logCounts {
	c := logCounts{throttled: map[string]int{}, renewFailed: map[string]int{}, releaseFailed: map[string]int{}, lost: map[string]int{}}
	for _, n := range nodes {
		logs := n.LogsSince(marks[n])
		c.throttled[n.Name] = strings.Count(logs, "client-side throttling")
		c.renewFailed[n.Name] = strings.Count(logs, "Announcement lease API call failed")
		c.releaseFailed[n.Name] = strings.Count(logs, "Could not release announcement lease")
		c.lost[n.Name] = strings.Count(logs, "Lost announcement lease")
	}
	return c
}

func sum(m map[string]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}

// measureLeaseLoad watches the Leases and scrapes the API server's request
// counters over window.
func measureLeaseLoad(b *testing.B, lt leaseTimings, services, held int, window time.Duration) loadResult {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leases := kube.CoordinationV1().Leases(leaseNS)
	list, err := leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	holder := map[string]string{}
	for i := range list.Items {
		holder[list.Items[i].Name] = holderOf(&list.Items[i])
	}
	// The watch stays open across both scrapes: the API server counts a
	// WATCH when it ends, so the benchmark's own requests are not counted.
	w, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()

	r := loadResult{timing: lt, services: services, held: held, byHolder: map[string]int{}}
	var (
		mu       sync.Mutex
		counting bool
		watchErr error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				mu.Lock()
				watchErr = apierrors.FromObject(ev.Object)
				mu.Unlock()
				continue
			}
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok || !strings.HasPrefix(l.Name, leasePrefix) {
				continue
			}
			h := holderOf(l)
			mu.Lock()
			if counting {
				switch ev.Type {
				case watch.Added:
					r.added++
				case watch.Deleted:
					r.deleted++
				case watch.Modified:
					r.modified++
					r.byHolder[h]++
					if holder[l.Name] != h {
						r.holderChanges++
					}
				}
			}
			holder[l.Name] = h
			mu.Unlock()
		}
	}()

	marks := logMarks()
	before, err := scrapeLeaseRequests(ctx)
	if err != nil {
		b.Fatal(err)
	}
	mu.Lock()
	counting = true
	mu.Unlock()
	t0 := time.Now()
	time.Sleep(window)
	after, err := scrapeLeaseRequests(ctx)
	if err != nil {
		b.Fatal(err)
	}
	r.elapsed = time.Since(t0)
	mu.Lock()
	counting = false
	werr := watchErr
	mu.Unlock()
	w.Stop()
	<-done
	if werr != nil {
		b.Errorf("watching Leases: %v (the write counts may be short)", werr)
	}
	r.logs = countLogs(marks)

	r.requests = map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			r.requests[k] = d
		}
	}
	for k, v := range r.requests {
		verb, _, _ := strings.Cut(k, " ")
		if slices.Contains(readVerbs, verb) {
			r.reads += v
		} else {
			r.writes += v
		}
	}
	reportLoad(b, r)
	if msg := deadAgents(); msg != "" {
		suite.Say(b, "agents died during the measurement:%s", msg)
	}
	return r
}

// scrapeLeaseRequests reads the API server's request counts for resource
// leases, by "VERB code".
func scrapeLeaseRequests(ctx context.Context) (map[string]float64, error) {
	counts, err := testCluster.RequestCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for k, v := range counts {
		if k.Resource == "leases" && k.Subresource == "" {
			out[k.Verb+" "+k.Code] += v
		}
	}
	return out, nil
}

func reportLoad(b *testing.B, r loadResult) {
	secs := r.elapsed.Seconds()
	const nNodes = 3
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(r.modified)/secs, "lease-writes/s")
	b.ReportMetric(r.writes/secs, "api-writes/s")
	b.ReportMetric(r.reads/secs, "api-reads/s")
	b.ReportMetric(r.writes/secs/nNodes, "api-writes/s/node")
	b.ReportMetric(r.reads/secs/nNodes, "api-reads/s/node")
	for _, n := range nodes {
		b.ReportMetric(float64(r.byHolder[n.Name])/secs, n.Name+"-lease-writes/s")
	}
	b.ReportMetric(float64(r.holderChanges), "holder-changes")
	b.ReportMetric(float64(r.held), "leases-held")
	b.ReportMetric(float64(sum(r.logs.throttled)), "throttle-msgs")
	b.ReportMetric(float64(sum(r.logs.renewFailed)), "renew-failures")
	b.ReportMetric(float64(sum(r.logs.lost)), "leases-lost")

	var sb strings.Builder
	fmt.Fprintf(&sb, "Lease API load, %d announced Services, %s (%d Leases held at the start), over %.1f s:\n",
		r.services, r.timing, r.held, secs)
	fmt.Fprintf(&sb, "  watch (cilium-l2announce-*): %d MODIFIED = %.1f writes/s (%d ADDED, %d DELETED, %d holder changes)\n",
		r.modified, float64(r.modified)/secs, r.added, r.deleted, r.holderChanges)
	var holders []string
	for h := range r.byHolder {
		holders = append(holders, h)
	}
	sort.Strings(holders)
	for _, h := range holders {
		name := h
		if name == "" {
			name = "(no holder: releases)"
		}
		fmt.Fprintf(&sb, "    by holder %-8s %6d = %7.1f writes/s\n", name, r.byHolder[h], float64(r.byHolder[h])/secs)
	}
	fmt.Fprintf(&sb, "  apiserver_request_total{resource=\"leases\"}: writes %.1f/s (%.1f/s per node), reads %.1f/s (%.1f/s per node)\n",
		r.writes/secs, r.writes/secs/nNodes, r.reads/secs, r.reads/secs/nNodes)
	var keys []string
	for k := range r.requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&sb, "    %-12s %8.0f = %8.1f/s\n", k, r.requests[k], r.requests[k]/secs)
	}
	fmt.Fprintf(&sb, "  lease requests per node: %.1f/s (the agents' --k8s-client-qps: 100 by default, shared with their other requests)\n", (r.reads+r.writes)/secs/nNodes)
	fmt.Fprintf(&sb, "  agents' logs in the window: %s", r.logs)
	suite.Say(b, "%s", sb.String())
}

func logLoadSummary(b *testing.B, rs []loadResult) {
	if len(rs) == 0 {
		return
	}
	var sb strings.Builder
	sb.WriteString("Lease API load summary (per node: API server totals / 3; by holder: watch MODIFIED events):\n")
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "timings\tservices\theld\tlease writes/s\tAPI writes/s\tAPI reads/s\twrites/s/node\treads/s/node\t")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s writes/s\t", n.Name)
	}
	fmt.Fprintln(tw, "req/s/node\tholder changes\tthrottling msgs (window/since policy)\tfailed renewals\tleases lost\t")
	for _, r := range rs {
		secs := r.elapsed.Seconds()
		fmt.Fprintf(tw, "%s %s/%s/%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t",
			r.timing.name, r.timing.duration, r.timing.renew, r.timing.retry, r.services, r.held,
			float64(r.modified)/secs, r.writes/secs, r.reads/secs, r.writes/secs/3, r.reads/secs/3)
		for _, n := range nodes {
			fmt.Fprintf(tw, "%.1f\t", float64(r.byHolder[n.Name])/secs)
		}
		fmt.Fprintf(tw, "%.1f\t%d\t%d/%d\t%d\t%d\t\n", (r.reads+r.writes)/secs/3, r.holderChanges,
			sum(r.logs.throttled), sum(r.settle.throttled), sum(r.logs.renewFailed), sum(r.logs.lost))
	}
	_ = tw.Flush()
	suite.Say(b, "%s", sb.String())
}

// ---------------------------------------------------------------------------
// BenchmarkAPIServerOutage
// ---------------------------------------------------------------------------

// outagePoolCIDR backs the Services of BenchmarkAPIServerOutage.
const outagePoolCIDR = "198.18.160.0/24"

// BenchmarkAPIServerOutage stops the kube-apiserver (SIGSTOP) for
// BENCH_L2_OUTAGE (120s) under the members election at default settings,
// with BENCH_L2_OUTAGE_SERVICES (100) announced Services. Once a second it
// reads every node's responder map and counts the VIPs no node answers for
// and the VIPs that moved; halfway it kills the agent of one VIP's owner
// (kill -9) and measures until another node answers that VIP. After the API
// server is back, it waits until the Leases name the nodes that answer.
func BenchmarkAPIServerOutage(b *testing.B) {
	outage := envDuration(b, "BENCH_L2_OUTAGE", 120*time.Second)
	n := suite.EnvInt(b, "BENCH_L2_OUTAGE_SERVICES", 100)
	ensureAgents(b)
	withTimings(b, defaultTimings, "--l2-announcements-election=members")
	bn := newBenchNS(b)
	ctx := context.Background()
	pools := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	poolName := bn.ns + "-outage"
	createPool(b, poolName, bn.ns, outagePoolCIDR)
	b.Cleanup(func() { _ = pools.Delete(context.Background(), poolName, metav1.DeleteOptions{}) })
	block := netip.MustParsePrefix(outagePoolCIDR)
	var svcs []*corev1.Service
	vips := map[netip.Addr]bool{}
	ip := block.Addr()
	for i := range n {
		ip = ip.Next()
		vips[ip] = true
		svcs = append(svcs, bn.service(fmt.Sprintf("o-%03d", i), nil, map[string]string{tables.AnnotationIPs: ip.String()}))
	}
	parallel(svcs, func(svc *corev1.Service) {
		if _, err := kube.CoreV1().Services(bn.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			b.Errorf("creating %s: %v", svc.Name, err)
		}
	})
	bn.setPolicy()
	var before map[netip.Addr][]string
	waitFor(b, func() (bool, string) {
		before = responderOwners(b)
		single := 0
		for vip := range vips {
			if len(before[vip]) == 1 {
				single++
			}
		}
		return single == n, fmt.Sprintf("%d of %d VIPs in exactly one responder", single, n)
	})
	suite.Say(b, "%d VIPs announced, each by one node; stopping the API server for %s", n, outage)

	must(b, testCluster.FreezeAPIServer())
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			must(b, testCluster.ThawAPIServer())
		}
	}
	defer thaw()
	var (
		victim        *node
		victimVIP     netip.Addr
		failover      time.Duration
		maxUnanswered int
		moved         = map[netip.Addr]bool{}
		samples       int
		start         = time.Now()
		killAt        = start.Add(outage / 2)
		killedAt      time.Time
	)
	for time.Since(start) < outage {
		now := responderOwners(b)
		samples++
		unanswered := 0
		for vip := range vips {
			victims := victim != nil && before[vip][0] == victim.Name // timed by the failover below
			switch {
			case len(now[vip]) == 0 && !victims:
				unanswered++
			case len(now[vip]) > 1:
				b.Errorf("%s in the responders of %v", vip, now[vip])
			case len(now[vip]) == 1 && now[vip][0] != before[vip][0] && !victims:
				moved[vip] = true
			}
		}
		maxUnanswered = max(maxUnanswered, unanswered)
		if victim == nil && time.Now().After(killAt) {
			for vip := range vips {
				victimVIP = vip
				break
			}
			victim = nodeNamed(before[victimVIP][0])
			// Ask every proberInterval until another node answers, as
			// BenchmarkFailover does (the other VIPs are sampled again
			// right after).
			mark := client.Mark()
			prober := client.StartMarkedProber(victimVIP, proberInterval)
			time.Sleep(10 * proberInterval)
			killedAt = time.Now()
			must(b, victim.Kill9())
			suite.Say(b, "kill -9 of %s (owner of %s) %s into the outage", victim.Name, victimVIP, time.Since(start).Round(time.Second))
			for failover == 0 && time.Since(killedAt) < 30*time.Second {
				frames, err := client.Since(mark)
				must(b, err)
				for _, f := range frames {
					if client.IsReply(f, victimVIP) && f.At.After(killedAt) && !slices.Equal(f.SHA, victim.host.MAC) {
						failover = f.At.Sub(killedAt)
						break
					}
				}
				time.Sleep(2 * time.Millisecond)
			}
			time.Sleep(500 * time.Millisecond)
			marks, frames, err := prober.Finish(mark)
			must(b, err)
			windows, doubles := client.DoubleAnswers(frames, victimVIP, marks)
			for _, d := range doubles {
				b.Errorf("%s", d)
			}
			suite.Say(b, "failover of %s during the outage: %.3f s; %d requests, %d answered by two MACs", victimVIP, failover.Seconds(), windows, len(doubles))
			if failover == 0 {
				b.Errorf("nobody answered for %s within 30 s of killing %s", victimVIP, victim.Name)
			}
		}
		time.Sleep(time.Second)
	}
	thaw()
	suite.Say(b, "API server back after %s", time.Since(start).Round(time.Second))
	recorded := time.Now()
	waitFor(b, func() (bool, string) {
		ensureAgents(b)
		owners := responderOwners(b)
		leases, err := kube.CoordinationV1().Leases(leaseNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		holders := map[string]string{}
		for i := range leases.Items {
			holders[leases.Items[i].Name] = holderOf(&leases.Items[i])
		}
		for i, svc := range svcs {
			vip := block.Addr()
			for range i + 1 {
				vip = vip.Next()
			}
			if o := owners[vip]; len(o) != 1 || holders[leaseName(bn.ns, svc.Name)] != o[0] {
				return false, fmt.Sprintf("%s answered by %v, Lease names %q", vip, o, holders[leaseName(bn.ns, svc.Name)])
			}
		}
		return true, ""
	})
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(maxUnanswered), "max-unanswered-VIPs")
	b.ReportMetric(float64(len(moved)), "moved-VIPs")
	b.ReportMetric(failover.Seconds(), "failover-s")
	suite.Say(b, "API server stopped %s, %d announced VIPs, %d samples: at most %d VIPs unanswered at once, %d moved (besides the killed node's); "+
		"kill -9 of %s during the outage: another node answered %s after %.3f s; Leases recorded %s after the API server returned",
		outage, n, samples, maxUnanswered, len(moved), victim.Name, victimVIP, failover.Seconds(), time.Since(recorded).Round(100*time.Millisecond))
}
