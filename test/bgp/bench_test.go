package bgp

// Benchmarks of the BGP control plane on the suite's LAN (three agents,
// FRR, a real kube-apiserver). Benchmarks, not tests: `go test` runs them
// only with -bench; each runs its experiment once (use -benchtime 1x),
// prints a table on stdout and reports figures with ReportMetric. They
// assert nothing about time. hack/bench-bgp.sh runs them:
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./test/bgp/
//
//   - BenchmarkRouteLatency: Service created → its LB IP in FRR's kernel
//     FIB with one next hop per node (ECMP), for Services created one at a
//     time (BENCH_BGP_SERVICES, 100), with create → IP in the Service's
//     status alongside;
//   - BenchmarkScale: 1000 Services (BENCH_BGP_SCALE) created at once →
//     all in FRR's RIB with three paths each; the agents' memory before and
//     after; withdrawal of all of them;
//   - BenchmarkNodeLoss: a node cut off the LAN (no FIN, no NOTIFICATION):
//     how long FRR keeps sending traffic to it (its path removed when the
//     hold timer expires) over BENCH_BGP_TRIALS (5) trials.

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/test/frr"
	"github.com/heraldlb/herald/test/suite"
)

func benchNamespace(b *testing.B, name string) string {
	b.Helper()
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	return name
}

func benchService(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{serviceLabel: "yes"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilyPolicy: ptrTo(corev1.IPFamilyPolicySingleStack),
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, Ports: []corev1.ServicePort{{Port: 80}}},
	}
}

// fibECMP reports the prefixes of the router's kernel FIB that have one
// next hop per node.
func fibECMP() (map[netip.Prefix]bool, error) {
	routes, err := frr.KernelRoutes(routerHost.Netns, "ipv4")
	if err != nil {
		return nil, err
	}
	out := map[netip.Prefix]bool{}
	for _, r := range routes {
		if len(r.NextHops) == len(nodes) {
			out[r.Dst] = true
		}
	}
	return out, nil
}

// rssMiB is an agent's resident memory.
func rssMiB(n *node) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.PID()))
	if err != nil {
		return math.NaN()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return math.NaN()
}

func BenchmarkRouteLatency(b *testing.B) {
	count := suite.EnvInt(b, "BENCH_BGP_SERVICES", 100)
	ns := benchNamespace(b, "hbgp-bench-latency")
	defer deleteBenchServices(ns, count)
	ctx := context.Background()
	var toIP, toFIB []float64
	for i := range count {
		name := fmt.Sprintf("svc-%d", i)
		start := time.Now()
		if _, err := kube.CoreV1().Services(ns).Create(ctx, benchService(ns, name), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		var vip netip.Addr
		var ipAt time.Time
		for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if !vip.IsValid() {
				svc, err := kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
				if err == nil && len(svc.Status.LoadBalancer.Ingress) > 0 {
					vip, ipAt = netip.MustParseAddr(svc.Status.LoadBalancer.Ingress[0].IP), time.Now()
				}
				continue
			}
			fib, err := fibECMP()
			if err == nil && fib[hostPrefix(vip)] {
				toIP = append(toIP, ipAt.Sub(start).Seconds()*1000)
				toFIB = append(toFIB, time.Since(start).Seconds()*1000)
				break
			}
		}
	}
	if len(toFIB) != count {
		b.Fatalf("%d of %d Services reached the router's FIB", len(toFIB), count)
	}
	slices.Sort(toIP)
	slices.Sort(toFIB)
	suite.Say(b, "%d Services, created one at a time (ms):\n%-30s %8s %8s %8s %8s\n%-30s %8.0f %8.0f %8.0f %8.0f\n%-30s %8.0f %8.0f %8.0f %8.0f",
		count, "measure", "p50", "p99", "min", "max",
		"create -> IP in status", suite.Percentile(toIP, 50), suite.Percentile(toIP, 99), toIP[0], toIP[len(toIP)-1],
		"create -> FIB, 3 next hops", suite.Percentile(toFIB, 50), suite.Percentile(toFIB, 99), toFIB[0], toFIB[len(toFIB)-1])
	b.ReportMetric(suite.Percentile(toFIB, 50), "p50-ms")
	b.ReportMetric(suite.Percentile(toFIB, 99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkScale(b *testing.B) {
	count := suite.EnvInt(b, "BENCH_BGP_SCALE", 1000)
	ns := benchNamespace(b, "hbgp-bench-scale")
	ctx := context.Background()
	var before []float64
	for _, n := range nodes {
		before = append(before, rssMiB(n))
	}
	start := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	var createErr error
	var mu sync.Mutex
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if _, err := kube.CoreV1().Services(ns).Create(ctx, benchService(ns, fmt.Sprintf("svc-%d", i)), metav1.CreateOptions{}); err != nil {
					mu.Lock()
					createErr = err
					mu.Unlock()
				}
			}
		}()
	}
	for i := range count {
		work <- i
	}
	close(work)
	wg.Wait()
	if createErr != nil {
		b.Fatal(createErr)
	}
	created := time.Since(start)
	// The Services' addresses, once LB IPAM gave them out.
	vips := map[netip.Prefix]bool{}
	for deadline := time.Now().Add(10 * time.Minute); len(vips) < count; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d Services got an IP within 10 minutes", len(vips), count)
		}
		list, err := kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, svc := range list.Items {
			for _, ing := range svc.Status.LoadBalancer.Ingress {
				vips[hostPrefix(netip.MustParseAddr(ing.IP))] = true
			}
		}
	}
	var inRIB time.Duration
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("not all %d Services in FRR's RIB with %d paths after 10 minutes", count, len(nodes))
		}
		if present, full := ribCount(vips); full == count && present == count {
			inRIB = time.Since(start)
			break
		}
	}
	var after []float64
	for _, n := range nodes {
		after = append(after, rssMiB(n))
	}
	delStart := time.Now()
	// No namespace controller runs: delete the Services themselves.
	work = make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				_ = kube.CoreV1().Services(ns).Delete(ctx, fmt.Sprintf("svc-%d", i), metav1.DeleteOptions{})
			}
		}()
	}
	for i := range count {
		work <- i
	}
	close(work)
	wg.Wait()
	_ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	var withdrawn time.Duration
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the Services' routes were not withdrawn within 10 minutes")
		}
		if left, _ := ribCount(vips); left == 0 {
			withdrawn = time.Since(delStart)
			break
		}
	}
	suite.Say(b, "%d Services on %d nodes: created in %.1fs; all in FRR's RIB with %d paths %.1fs after the first create; all withdrawn %.1fs after the delete\nagent RSS before/after (MiB): %s",
		count, len(nodes), created.Seconds(), len(nodes), inRIB.Seconds(), withdrawn.Seconds(), rssPairs(before, after))
	b.ReportMetric(inRIB.Seconds(), "all-in-RIB-s")
	b.ReportMetric(slices.Max(after), "max-rss-MiB")
	b.ReportMetric(0, "ns/op")
}

func rssPairs(before, after []float64) string {
	var out []string
	for i := range before {
		out = append(out, fmt.Sprintf("%s %.0f/%.0f", nodes[i].Name, before[i], after[i]))
	}
	return strings.Join(out, ", ")
}

func BenchmarkNodeLoss(b *testing.B) {
	trials := suite.EnvInt(b, "BENCH_BGP_TRIALS", 5)
	ns := benchNamespace(b, "hbgp-bench-loss")
	defer deleteBenchServices(ns, 0)
	ctx := context.Background()
	if _, err := kube.CoreV1().Services(ns).Create(ctx, benchService(ns, "svc-0"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var vip netip.Addr
	for deadline := time.Now().Add(timeout); !vip.IsValid(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("no IP")
		}
		if svc, err := kube.CoreV1().Services(ns).Get(ctx, "svc-0", metav1.GetOptions{}); err == nil && len(svc.Status.LoadBalancer.Ingress) > 0 {
			vip = netip.MustParseAddr(svc.Status.LoadBalancer.Ingress[0].IP)
		}
	}
	victim := nodes[len(nodes)-1]
	// cutTrial cuts the victim off the LAN and times until the router's
	// FIB stops sending to it.
	cutTrial := func() float64 {
		if err := waitFIB(hostPrefix(vip), len(nodes)); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := lan.Cut(victim.Name); err != nil {
			b.Fatal(err)
		}
		if err := waitFIB(hostPrefix(vip), len(nodes)-1); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start).Seconds()
		if err := lan.Heal(victim.Name); err != nil {
			b.Fatal(err)
		}
		return d
	}
	// Graceful restart off: the path goes when the hold timer expires.
	setGracefulRestart(b, false)
	var lost []float64
	for range trials {
		lost = append(lost, cutTrial())
	}
	slices.Sort(lost)
	// On (the suite's setting, restart time 120s): the router keeps the
	// dead node's paths, stale, for the restart time after the hold timer.
	setGracefulRestart(b, true)
	withGR := cutTrial()
	suite.Say(b, "node cut off the LAN (hold time 9s, keepalive 3s):\n  graceful restart off, %d trials: FRR's FIB drops its next hop after p50 %.1fs, max %.1fs\n  graceful restart on (restart time 120s), 1 trial: after %.1fs",
		trials, suite.Percentile(lost, 50), lost[len(lost)-1], withGR)
	b.ReportMetric(suite.Percentile(lost, 50), "p50-s")
	b.ReportMetric(withGR, "with-GR-s")
	b.ReportMetric(0, "ns/op")
}

// setGracefulRestart switches graceful restart in the shared peer configs
// and waits until every session is up again with it.
func setGracefulRestart(b *testing.B, on bool) {
	ctx := context.Background()
	for _, name := range []string{peerConfigV4, peerConfigV6} {
		pc, err := herald.CiliumV2alpha1().CiliumBGPPeerConfigs().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		pc.Spec.GracefulRestart.Enabled = on
		if _, err := herald.CiliumV2alpha1().CiliumBGPPeerConfigs().Update(ctx, pc, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if _, err := router.WaitNeighbors(wctx, func(ns map[string]frr.Neighbor) bool {
		for _, n := range nodes {
			for _, a := range []string{n.host.IP.String(), n.host.IP6.String()} {
				if ns[a].State != "Established" || ns[a].GracefulRestart != on {
					return false
				}
			}
		}
		return true
	}); err != nil {
		b.Fatalf("sessions with graceful restart %v: %v", on, err)
	}
}

// ribCount counts the prefixes of FRR's RIB among these, and those with
// one path per node; -1 when FRR cannot be read.
func ribCount(prefixes map[netip.Prefix]bool) (present, full int) {
	rib, err := router.RIB("ipv4")
	if err != nil {
		return -1, -1
	}
	for p, paths := range rib {
		if prefixes[p] {
			present++
			if len(paths) == len(nodes) {
				full++
			}
		}
	}
	return present, full
}

// deleteBenchServices deletes svc-0..svc-<count-1> (no namespace
// controller runs to do it) and the namespace.
func deleteBenchServices(ns string, count int) {
	ctx := context.Background()
	for i := range max(count, 1) {
		_ = kube.CoreV1().Services(ns).Delete(ctx, fmt.Sprintf("svc-%d", i), metav1.DeleteOptions{})
	}
	_ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
}

// waitFIB waits until the router's kernel route to p has n next hops.
func waitFIB(p netip.Prefix, n int) error {
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r, ok, err := router.KernelRoute(p)
		if err == nil && ok && len(r.NextHops) == n {
			return nil
		}
		if err == nil && !ok && n == 0 {
			return nil
		}
	}
	return fmt.Errorf("route %s never had %d next hops", p, n)
}
