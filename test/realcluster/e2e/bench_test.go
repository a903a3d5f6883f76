package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/heraldlb/herald/test/realcluster"
)

// BenchmarkRealCluster measures, on the real cluster, side by side in one
// run (make bench-realcluster; figures in Documentation/benchmarks.md):
//   - pod create -> Running with herald-ipam and with host-local on the
//     same nodes, interleaved rounds;
//   - Service create -> the first successful curl through its IP;
//   - the agents' RSS and CPU, idle and while 200 pods come and go;
//   - L2 failover after kubectl delete pod and kill -9 of the owner's
//     agent (HERALD_REALCLUSTER_TRIALS, 20 with make bench-realcluster).
//
// HERALD_REALCLUSTER_BENCH picks parts (comma-separated: startup, service,
// resources, failover); all by default.
func BenchmarkRealCluster(b *testing.B) {
	want := benchParts(b)
	applyYAML(b, fmt.Sprintf(lanFixtures, lanPoolStart, lanPoolStop))
	for i := 0; i < b.N; i++ {
		if want("startup") {
			benchPodStartup(b)
		}
		if want("service") {
			benchServiceToCurl(b)
		}
		if want("resources") {
			benchAgentResources(b)
		}
		if !want("failover") {
			continue
		}
		times := l2Failover(b)
		for name, ds := range times {
			b.Logf("L2 failover, longest time unanswered after %s: %d trials, p50 %s, p99 %s, max %s", name, len(ds),
				ms(percentile(ds, 50)), ms(percentile(ds, 99)), ms(percentile(ds, 100)))
		}
	}
}

// benchParts reads HERALD_REALCLUSTER_BENCH. A part it does not know stops
// the benchmark: a misspelt one would otherwise measure nothing, silently.
func benchParts(b *testing.B) func(part string) bool {
	all := []string{"startup", "service", "resources", "failover"}
	v := os.Getenv("HERALD_REALCLUSTER_BENCH")
	if v == "" {
		return func(string) bool { return true }
	}
	parts := strings.Split(v, ",")
	for _, p := range parts {
		if !slices.Contains(all, p) {
			b.Fatalf("HERALD_REALCLUSTER_BENCH=%q: unknown part %q (want some of %s)", v, p, strings.Join(all, ","))
		}
	}
	return func(part string) bool { return slices.Contains(parts, part) }
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// hostLocalConflist is the same bridge network with host-local, one
// subnet per node: written with a name containerd prefers, it replaces
// Herald's network for new pods until removed.
func hostLocalConflist(i int) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "hostlocal",
  "plugins": [{
    "type": "bridge", "bridge": "cni1", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "198.18.%d.0/24"}], [{"subnet": "fd00:18:%d::/64"}]]}
  }]
}`, 48+i, 48+i)
}

// useIPAM switches every node's network for new pods between herald-ipam
// and host-local, and waits until a new pod gets an address of the one
// chosen.
func useIPAM(b testing.TB, hostLocal bool, ns string) {
	b.Helper()
	for i, n := range cl.Nodes {
		path := n.HostPath("/etc/cni/net.d/05-hostlocal.conflist")
		if hostLocal {
			if err := os.WriteFile(path, []byte(hostLocalConflist(i)), 0o644); err != nil {
				b.Fatal(err)
			}
		} else if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
	}
	want := defaultPool4
	if hostLocal {
		want = netip.MustParsePrefix("198.18.48.0/20")
	}
	waitFor(b, timeout, func() (bool, string) {
		pods := runPods(b, ns, "probe", 1)
		defer deletePods(b, ns, "probe")
		a := podAddrs(pods[0].pod)
		return len(a) > 0 && want.Contains(a[0]), fmt.Sprintf("a new pod got %v, want an address of %s", a, want)
	})
}

type startedPod struct {
	pod  corev1.Pod
	took time.Duration
}

// runPods creates n backend pods one after the other, each once the one
// before runs, and returns them with their create -> Running times.
func runPods(b testing.TB, ns, name string, n int) []startedPod {
	b.Helper()
	ctx := context.Background()
	var out []startedPod
	for i := 0; i < n; i++ {
		tmpl := backendPod(map[string]string{"bench": name}, nil)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Namespace: ns, Labels: tmpl.Labels}, Spec: tmpl.Spec}
		p.Spec.Containers[0].ReadinessProbe = nil
		opts := metav1.ListOptions{FieldSelector: "metadata.name=" + p.Name}
		w, err := cl.Client.CoreV1().Pods(ns).Watch(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		created, err := cl.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		last := created
		var running *corev1.Pod
		deadline := time.After(timeout)
		for running == nil {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok { // the API server ended the watch: go on from the last version seen
					opts.ResourceVersion = last.ResourceVersion
					if w, err = cl.Client.CoreV1().Pods(ns).Watch(ctx, opts); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted {
					last = pod
					if pod.Status.Phase == corev1.PodRunning {
						running = pod
					}
				}
			case <-deadline:
				b.Fatalf("pod %s/%s not Running after %s: %s %+v%s", ns, p.Name, timeout, last.Status.Phase, last.Status.Conditions, podEvents(ns))
			}
		}
		w.Stop()
		out = append(out, startedPod{pod: *running, took: time.Since(start)})
	}
	return out
}

func deletePods(b testing.TB, ns, name string) {
	b.Helper()
	ctx := context.Background()
	if err := cl.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{LabelSelector: "bench=" + name}); err != nil {
		b.Fatal(err)
	}
	waitFor(b, timeout, func() (bool, string) {
		l, err := cl.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "bench=" + name})
		return err == nil && len(l.Items) == 0, fmt.Sprintf("pods bench=%s left: %v", name, err)
	})
}

// benchPodStartup: pod create -> Running, herald-ipam and host-local in
// interleaved rounds of 20 pods each.
func benchPodStartup(b *testing.B) {
	ns := newNamespace(b, "startup", nil)
	results := map[string][]time.Duration{}
	const rounds, perRound = 3, 20
	for r := 0; r < rounds; r++ {
		for _, hostLocal := range []bool{false, true} {
			name := "herald-ipam"
			if hostLocal {
				name = "host-local"
			}
			useIPAM(b, hostLocal, ns)
			for _, p := range runPods(b, ns, "startup", perRound) {
				results[name] = append(results[name], p.took)
			}
			deletePods(b, ns, "startup")
		}
	}
	useIPAM(b, false, ns)
	for _, name := range []string{"herald-ipam", "host-local"} {
		ds := results[name]
		b.Logf("pod create -> Running with %s: %d pods (%d rounds of %d, interleaved), p50 %s, p99 %s, max %s",
			name, len(ds), rounds, perRound, ms(percentile(ds, 50)), ms(percentile(ds, 99)), ms(percentile(ds, 100)))
	}
}

// benchServiceToCurl: Service create -> the first curl through its IP
// that a pod answers, 20 times, with the steps on the way: the IP in the
// Service's status (LB IPAM), the first ARP reply for it at the client
// (L2 announcement), the first answer through it (kube-proxy's rules
// too).
func benchServiceToCurl(b *testing.B) {
	ns := newNamespace(b, "svc2curl", nil)
	deployBackend(b, ns, "s2c", 3, nil)
	ctx := context.Background()
	c := client(b)
	steps := map[string][]time.Duration{}
	for i := 0; i < 20; i++ {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "s2c", Namespace: ns},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "s2c"},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstrPort()}}},
		}
		// A new client: what the last trial's IP resolved to is forgotten
		// (the next Service may get the same IP, from another node).
		if out, err := exec.Command("ip", "-n", cl.ClientHost.Netns, "neigh", "flush", "dev", "eth0").CombinedOutput(); err != nil {
			b.Fatalf("flushing the client's neighbors: %v: %s", err, out)
		}
		mark := c.Mark()
		start := time.Now()
		if _, err := cl.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		var vip netip.Addr
		var ipAt time.Duration
		for !vip.IsValid() && time.Since(start) < timeout {
			s, err := cl.Client.CoreV1().Services(ns).Get(ctx, "s2c", metav1.GetOptions{})
			if err == nil && len(s.Status.LoadBalancer.Ingress) > 0 {
				vip, _ = netip.ParseAddr(s.Status.LoadBalancer.Ingress[0].IP)
				ipAt = time.Since(start)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if !vip.IsValid() {
			b.Fatalf("Service %s/s2c got no IP within %s", ns, timeout)
		}
		// From here the client asks who-has every 20 ms and starts a curl
		// every 50 ms, each allowed 3 s: the first to get an answer
		// tells when the path through the IP was complete, to within
		// 50 ms (a curl that starts too early waits for its SYN's
		// retransmission, one that starts later does not).
		stopARP := c.StartProber(vip, 20*time.Millisecond)
		rulesAt := make(chan time.Duration, 1)
		go func() { rulesAt <- kubeProxyRules(vip, start) }()
		curlAt := firstCurl(vip, start, "s2c-")
		if err := stopARP(); err != nil {
			b.Fatal(err)
		}
		if curlAt == 0 {
			b.Fatalf("Service %s/s2c (IP %v) not answered after %s", ns, vip, timeout)
		}
		var arpAt time.Duration
		frames, _ := c.Since(mark)
		for _, f := range frames {
			if c.IsReply(f, vip) {
				arpAt = f.At.Sub(start)
				break
			}
		}
		steps["IP in status"] = append(steps["IP in status"], ipAt)
		if arpAt > 0 {
			steps["first ARP reply"] = append(steps["first ARP reply"], arpAt)
		}
		if at := <-rulesAt; at > 0 {
			steps["kube-proxy rules on every node"] = append(steps["kube-proxy rules on every node"], at)
		}
		steps["first curl answered"] = append(steps["first curl answered"], curlAt)
		if err := cl.Client.CoreV1().Services(ns).Delete(ctx, "s2c", metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		waitFor(b, timeout, func() (bool, string) {
			_, err := cl.Client.CoreV1().Services(ns).Get(ctx, "s2c", metav1.GetOptions{})
			return err != nil, "Service s2c not deleted yet"
		})
		time.Sleep(2 * time.Second) // the old IP's announcement and rules go
	}
	for _, step := range []string{"IP in status", "first ARP reply", "kube-proxy rules on every node", "first curl answered"} {
		ds := steps[step]
		b.Logf("Service create -> %s: %d trials, p50 %s, p99 %s, max %s", step, len(ds), ms(percentile(ds, 50)), ms(percentile(ds, 99)), ms(percentile(ds, 100)))
	}
}

// firstCurl starts a curl through vip every 50 ms until one is answered
// with the prefix, and returns when the first was, since start (0 if none
// within the timeout). It returns once every curl it started has ended.
func firstCurl(vip netip.Addr, start time.Time, prefix string) time.Duration {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first time.Duration
	)
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != 0
	}
	for !done() && time.Since(start) < timeout {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := curlVIPWithin(vip, 3*time.Second)
			at := time.Since(start)
			if err == nil && strings.HasPrefix(out, prefix) {
				mu.Lock()
				if first == 0 || at < first {
					first = at
				}
				mu.Unlock()
			}
		}()
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	return first
}

// kubeProxyRules returns when kube-proxy had a rule for vip on every node
// (iptables' KUBE-SERVICES chain), since start; 0 if not within the
// timeout. It is the part of Service -> curl that is not Herald's.
func kubeProxyRules(vip netip.Addr, start time.Time) time.Duration {
	pending := slices.Clone(cl.Nodes)
	for len(pending) > 0 && time.Since(start) < timeout {
		pending = slices.DeleteFunc(pending, func(n *realcluster.Node) bool {
			out, err := n.Exec(context.Background(), "iptables", "-w", "-t", "nat", "-S", "KUBE-SERVICES")
			return err == nil && strings.Contains(string(out), " "+vip.String()+"/32 ")
		})
		if len(pending) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(pending) > 0 {
		return 0
	}
	return time.Since(start)
}

// agentUsage is one agent process's resident memory and CPU time so far.
type agentUsage struct {
	rss  int64 // bytes
	cpu  time.Duration
	node string
}

func agentUsages(b testing.TB) []agentUsage {
	b.Helper()
	var out []agentUsage
	tick := float64(100) // USER_HZ
	for _, n := range cl.Nodes {
		pids := n.Processes("herald-agent")
		if len(pids) != 1 {
			b.Fatalf("herald-agent processes on %s: %v", n.Name, pids)
		}
		u := agentUsage{node: n.Name}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pids[0]))
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				u.rss = kb * 1024
			}
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pids[0]))
		if err != nil {
			b.Fatal(err)
		}
		f := strings.Fields(string(stat)[strings.LastIndexByte(string(stat), ')')+2:])
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		u.cpu = time.Duration((ut + st) / tick * float64(time.Second))
		out = append(out, u)
	}
	return out
}

// benchAgentResources: the agents' RSS and CPU over 60 s of idle, then
// while 200 pods are created and deleted.
func benchAgentResources(b *testing.B) {
	report := func(what string, before, after []agentUsage, d time.Duration) {
		for i := range after {
			b.Logf("agent on %s, %s: RSS %.1f MiB, CPU %s over %s (%.1f%% of a core)", after[i].node, what,
				float64(after[i].rss)/(1<<20), ms(after[i].cpu-before[i].cpu), d.Round(time.Second),
				100*float64(after[i].cpu-before[i].cpu)/float64(d))
		}
	}
	before, start := agentUsages(b), time.Now()
	time.Sleep(time.Minute)
	report("idle", before, agentUsages(b), time.Since(start))

	ns := newNamespace(b, "benchchurn", nil)
	deployBackend(b, ns, "bc", 0, nil)
	ctx := context.Background()
	before, start = agentUsages(b), time.Now()
	var peak sync.Map
	scale := func(n int) {
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
		if _, err := cl.Client.AppsV1().Deployments(ns).Patch(ctx, "bc", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	scale(200)
	waitPodsReady(b, ns, "app=bc", 200)
	for _, u := range agentUsages(b) {
		peak.Store(u.node, u.rss)
	}
	scale(0)
	waitFor(b, timeout, func() (bool, string) {
		l, err := cl.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=bc"})
		return err == nil && len(l.Items) == 0, "churn pods left"
	})
	after := agentUsages(b)
	for i := range after {
		if v, ok := peak.Load(after[i].node); ok {
			after[i].rss = max(after[i].rss, v.(int64))
		}
	}
	report("200 pods created and deleted (RSS: the higher of at 200 pods and at the end)", before, after, time.Since(start))
}
