package bgp

// BFD benchmarks (see bench_test.go for how they run):
//
//   - BenchmarkBFDFailover: how long FRR keeps sending traffic to a node
//     that stops answering (its agent frozen with SIGSTOP: the TCP
//     session stays open) or is cut off the LAN, with BFD at 100 ms × 3
//     (300 ms detection time, graceful restart on) and without (the hold
//     time, 9 s, graceful restart off), BENCH_BGP_BFD_TRIALS (20) trials
//     with BFD and BENCH_BGP_TRIALS (5) without; and, for reference, an
//     agent killed with -9 without BFD or graceful restart (its kernel
//     closes the TCP sessions);
//   - BenchmarkBFDCPUStress: BFD sessions flapping while busy loops
//     saturate every CPU of the machine for BENCH_BGP_BFD_STRESS (5m).

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/test/suite"
)

func BenchmarkBFDFailover(b *testing.B) {
	bfdTrials := suite.EnvInt(b, "BENCH_BGP_BFD_TRIALS", 20)
	plainTrials := suite.EnvInt(b, "BENCH_BGP_TRIALS", 5)
	vip := benchVIP(b, "hbgp-bench-bfd")
	victim := nodes[len(nodes)-1]
	freeze := func() error { return victim.Freeze() }
	thaw := func() error { return victim.Thaw() }
	cut := func() error { return lan.Cut(victim.Name) }
	heal := func() error { return lan.Heal(victim.Name) }
	kill := func() error { return victim.Kill9() }
	revive := func() error { return victim.Start() }

	setBFD(b, true)
	freezeBFD := failoverTrials(b, vip, bfdTrials, freeze, thaw, true)
	cutBFD := failoverTrials(b, vip, bfdTrials, cut, heal, true)
	setBFD(b, false)
	// Without BFD, graceful restart off (as in BenchmarkNodeLoss): with
	// it on, the router keeps the paths of a silent node for the restart
	// time after the hold time.
	setGracefulRestart(b, false)
	freezePlain := failoverTrials(b, vip, plainTrials, freeze, thaw, false)
	cutPlain := failoverTrials(b, vip, plainTrials, cut, heal, false)
	killPlain := failoverTrials(b, vip, plainTrials, kill, revive, false)
	setGracefulRestart(b, true)

	row := func(name string, d []float64) string {
		return fmt.Sprintf("  %-46s %2d trials: p50 %6.3fs  p99 %6.3fs  max %6.3fs", name, len(d),
			suite.Percentile(d, 50), suite.Percentile(d, 99), d[len(d)-1])
	}
	suite.Say(b, "node failure -> FRR's FIB stops using the node (hold time 9s, keepalive 3s):\n%s\n%s\n%s\n%s\n%s",
		row("agent frozen (SIGSTOP), BFD 100ms x3, GR on", freezeBFD), row("node cut off the LAN, BFD 100ms x3, GR on", cutBFD),
		row("agent frozen (SIGSTOP), no BFD, GR off", freezePlain), row("node cut off the LAN, no BFD, GR off", cutPlain),
		row("agent kill -9, no BFD, GR off (TCP FIN)", killPlain))
	b.ReportMetric(suite.Percentile(freezeBFD, 99), "freeze-bfd-p99-s")
	b.ReportMetric(suite.Percentile(cutBFD, 99), "cut-bfd-p99-s")
	b.ReportMetric(suite.Percentile(cutPlain, 50), "cut-holdtime-p50-s")
	b.ReportMetric(0, "ns/op")
}

// benchVIP creates one advertised Service and returns its IP.
func benchVIP(b *testing.B, ns string) netip.Addr {
	benchNamespace(b, ns)
	b.Cleanup(func() { deleteBenchServices(ns, 0) })
	ctx := context.Background()
	if _, err := kube.CoreV1().Services(ns).Create(ctx, benchService(ns, "svc-0"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if svc, err := kube.CoreV1().Services(ns).Get(ctx, "svc-0", metav1.GetOptions{}); err == nil && len(svc.Status.LoadBalancer.Ingress) > 0 {
			return netip.MustParseAddr(svc.Status.LoadBalancer.Ingress[0].IP)
		}
	}
	b.Fatal("no IP")
	return netip.Addr{}
}

// failoverTrials times, per trial, from fail() to the router's FIB route
// to vip losing the victim's next hop, then recovers and waits for all
// next hops (and, with BFD, every BFD session up) again. Sorted seconds.
func failoverTrials(b *testing.B, vip netip.Addr, trials int, fail, recover func() error, bfd bool) []float64 {
	var out []float64
	for range trials {
		if err := waitFIB(hostPrefix(vip), len(nodes)); err != nil {
			b.Fatal(err)
		}
		if bfd {
			waitBFDUp(b)
		}
		start := time.Now()
		if err := fail(); err != nil {
			b.Fatal(err)
		}
		if err := waitFIB(hostPrefix(vip), len(nodes)-1); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start).Seconds()
		out = append(out, d)
		if err := recover(); err != nil {
			b.Fatal(err)
		}
		if bfd && d > 10 {
			// BFD did not do it (e.g. the router kept the paths for
			// graceful restart): one such trial says so, more cost
			// minutes each.
			suite.Say(b, "a trial with BFD took %.1fs: stopping the series after %d trials", d, len(out))
			break
		}
	}
	if err := waitFIB(hostPrefix(vip), len(nodes)); err != nil {
		b.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func BenchmarkBFDCPUStress(b *testing.B) {
	d := 5 * time.Minute
	if v := os.Getenv("BENCH_BGP_BFD_STRESS"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			b.Fatalf("BENCH_BGP_BFD_STRESS: %v", err)
		}
	}
	ensureAgents(b)
	setBFD(b, true)
	defer setBFD(b, false)
	before := bfdDowns(b)
	stop := cpuHog(b, 4)
	time.Sleep(d)
	stop()
	f := flaps(before, bfdDowns(b))
	suite.Say(b, "4 busy loops on the machine's %d CPUs for %s, BFD 100ms x3, 6 sessions seen from both sides: %d went down %v",
		runtime.NumCPU(), d, len(f), f)
	b.ReportMetric(float64(len(f)), "flaps")
	b.ReportMetric(0, "ns/op")
}
