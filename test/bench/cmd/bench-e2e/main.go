// Command bench-e2e measures Herald end to end against a real etcd +
// kube-apiserver (test/cluster):
//
//   - phase A, "apiserver alone": create N LoadBalancer Services with W
//     concurrent workers and no agent running; the figure is the wall time
//     until every Create call has returned. The Services are then deleted.
//   - phase B, "with Herald": start herald-agent, wait until it holds the
//     LB IPAM Lease, create N other Services the same way; the figure is the
//     wall time from the first Create until a Service watch (an informer) has
//     seen an ingress IP on every one of them.
//
// It also reports how many Service MODIFIED watch events phase B produced
// (nothing but the agent writes Services here: no controller-manager runs, so
// these are the agent's status writes that changed something) and the agent's
// VmRSS/VmHWM from /proc. Nothing is sleeping inside a measured window and
// nothing is cached: every run starts a fresh cluster.
//
// Run it from inside the repository (make bench-alloc does):
//
//	go build -o _output/bin/bench-e2e ./test/bench/cmd/bench-e2e
//	_output/bin/bench-e2e -services 1000 -workers 16
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/cluster"
)

const (
	// leaseName and leaseNamespace: the Lease herald-agent campaigns for
	// (cells/lbipam/allocator.LeaseName in --k8s-namespace).
	leaseName      = "herald-lb-ipam"
	leaseNamespace = "kube-system"
	// nodeName is the agent's --node-name, which starts the Lease's
	// holderIdentity.
	nodeName = "bench"
	// benchNamespace holds the benchmark's Services.
	benchNamespace = "herald-bench"
	phaseLabel     = "herald-bench/phase"
	poolName       = "bench"
)

type options struct {
	services  int
	workers   int
	agent     string
	agentArgs string
	poolCIDR  string
	timeout   time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.services, "services", 1000, "LoadBalancer Services to create in each phase")
	flag.IntVar(&o.workers, "workers", 16, "concurrent Create calls")
	flag.StringVar(&o.agent, "agent", "_output/bin/herald-agent", "herald-agent binary (relative paths are relative to the repository root)")
	flag.StringVar(&o.agentArgs, "agent-args", "", "extra herald-agent flags, space separated (e.g. \"--k8s-client-qps=500 --k8s-client-burst=1000\")")
	flag.StringVar(&o.poolCIDR, "pool-cidr", "198.18.0.0/16", "the one block of the benchmark's CiliumLoadBalancerIPPool")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	if o.services < 1 || o.workers < 1 {
		fatalf("-services and -workers must be at least 1")
	}
	pool, err := netip.ParsePrefix(o.poolCIDR)
	if err != nil {
		fatalf("-pool-cidr: %v", err)
	}
	if pool.Addr().Is4() && pool.Bits() > 32-bitsFor(o.services) {
		fatalf("-pool-cidr %s is too small for %d Services", pool, o.services)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	if err := run(ctx, o, pool); err != nil {
		fatalf("%v", err)
	}
}

func bitsFor(n int) int {
	b := 0
	for (1 << b) < n+2 {
		b++
	}
	return b
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-e2e: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-e2e: %s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

type result struct {
	aCreates     time.Duration // phase A: until every Create returned
	bCreates     time.Duration // phase B: until every Create returned
	bAllIPs      time.Duration // phase B: until every Service had an ingress IP
	writes       int           // Service MODIFIED events during phase B
	maxWrites    int           // most MODIFIED events on one Service
	events       int           // Events in the Services' namespace after phase B
	rssKiB       int64
	hwmKiB       int64
	loadStart    string // /proc/loadavg: the machine may be shared
	loadEnd      string
	agentStarted time.Duration // from exec to holding the Lease
}

func run(ctx context.Context, o options, pool netip.Prefix) (err error) {
	root := cluster.RepoRoot()
	if root == "" {
		return errors.New("run me from inside the repository (cannot find its go.mod)")
	}
	agentPath := o.agent
	if !filepath.IsAbs(agentPath) {
		agentPath = filepath.Join(root, agentPath)
	}
	if _, err := os.Stat(agentPath); err != nil {
		return fmt.Errorf("herald-agent: %w (run make build)", err)
	}

	logf("starting etcd + kube-apiserver")
	c, err := cluster.Start(cluster.Options{})
	if err != nil {
		return err
	}
	defer func() {
		logf("stopping the cluster")
		c.Stop()
	}()

	var res result
	res.loadStart = loadAvg()
	if err = c.InstallCRDs(ctx, filepath.Join(root, "install", "crds")); err != nil {
		return err
	}
	herald, err := versioned.NewForConfig(c.RESTConfig)
	if err != nil {
		return err
	}
	for _, ns := range []string{leaseNamespace, benchNamespace} {
		_, err := c.Client.CoreV1().Namespaces().Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	_, err = herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Create(ctx, &v2alpha1.CiliumLoadBalancerIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: poolName},
		Spec: v2alpha1.CiliumLoadBalancerIPPoolSpec{
			Blocks: []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: pool.String()}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating pool %s: %w", poolName, err)
	}

	// Phase A: the API server alone.
	logf("phase A: creating %d LoadBalancer Services with %d workers, no agent", o.services, o.workers)
	if res.aCreates, err = createServices(ctx, c.Client, "a", o.services, o.workers); err != nil {
		return fmt.Errorf("phase A: %w", err)
	}
	logf("phase A: all Create calls returned after %.3fs; deleting", res.aCreates.Seconds())
	if err := deleteServices(ctx, c.Client, "a", o.services, o.workers); err != nil {
		return fmt.Errorf("phase A cleanup: %w", err)
	}

	// Phase B: with Herald.
	a, err := startAgent(agentPath, c.Kubeconfig, strings.Fields(o.agentArgs))
	if err != nil {
		return err
	}
	defer func() {
		if serr := a.stop(); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench-e2e: agent log kept at %s; its tail:\n%s\n", a.logPath, tail(a.logPath, 30))
		} else {
			_ = os.Remove(a.logPath)
		}
		_ = os.RemoveAll(a.tmpDir)
	}()
	t0 := time.Now()
	if err := waitLease(ctx, c.Client, a); err != nil {
		return err
	}
	res.agentStarted = time.Since(t0)
	logf("agent (pid %d) holds Lease %s/%s after %.3fs; log %s", a.cmd.Process.Pid, leaseNamespace, leaseName, res.agentStarted.Seconds(), a.logPath)

	tr := newTracker(o.services)
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0,
		informers.WithNamespace(benchNamespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = phaseLabel + "=b" }))
	inf := factory.Core().V1().Services().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { tr.observe(obj, nil) },
		UpdateFunc: func(oldObj, newObj any) {
			tr.observe(newObj, oldObj)
		},
	}); err != nil {
		return err
	}
	infCtx, stopInf := context.WithCancel(ctx)
	factory.Start(infCtx.Done())
	defer func() {
		stopInf()
		factory.Shutdown() // waits for the informer, which needs stopInf first
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("phase B: the Service informer did not sync")
	}

	logf("phase B: creating %d LoadBalancer Services with %d workers, agent running", o.services, o.workers)
	tr.start(time.Now())
	if res.bCreates, err = createServices(ctx, c.Client, "b", o.services, o.workers); err != nil {
		return fmt.Errorf("phase B: %w", err)
	}
	logf("phase B: all Create calls returned after %.3fs; waiting for ingress IPs", res.bCreates.Seconds())
	select {
	case <-tr.done:
	case <-a.exited:
		return fmt.Errorf("phase B: herald-agent exited: %v", a.waitErr)
	case <-ctx.Done():
		return fmt.Errorf("phase B: %d of %d Services have an ingress IP: %w", tr.count(), o.services, ctx.Err())
	}
	res.bAllIPs = tr.last.Sub(tr.t0)
	logf("phase B: every Service has an ingress IP after %.3fs", res.bAllIPs.Seconds())

	// Outside the measured window: let late status writes arrive before
	// counting them (quiet for 2s, at most 15s).
	settle(ctx, tr, 2*time.Second, 15*time.Second)
	res.writes, res.maxWrites = tr.modifications()
	evs, err := c.Client.CoreV1().Events(benchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	res.events = len(evs.Items)
	if res.rssKiB, res.hwmKiB, err = procMem(a.cmd.Process.Pid); err != nil {
		return err
	}
	if err := checkIPs(inf.GetStore().List(), pool, o.services); err != nil {
		return fmt.Errorf("phase B: %w", err)
	}

	res.loadEnd = loadAvg()
	printTable(o, res)
	return nil
}

func serviceName(phase string, i int) string { return fmt.Sprintf("lb-%s-%05d", phase, i) }

func newService(phase string, i int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      serviceName(phase, i),
			Namespace: benchNamespace,
			Labels:    map[string]string{phaseLabel: phase},
		},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			AllocateLoadBalancerNodePorts: ptr.To(false),
			Selector:                      map[string]string{"app": serviceName(phase, i)},
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080),
			}},
		},
	}
}

// createServices creates n Services with w workers and returns the wall
// time from releasing the workers until the last Create call returned.
func createServices(ctx context.Context, client kubernetes.Interface, phase string, n, w int) (time.Duration, error) {
	svcs := make([]*corev1.Service, n) // built before the clock starts
	for i := range svcs {
		svcs[i] = newService(phase, i)
	}
	elapsed, err := parallel(ctx, n, w, func(ctx context.Context, i int) error {
		_, err := client.CoreV1().Services(benchNamespace).Create(ctx, svcs[i], metav1.CreateOptions{})
		return err
	})
	return elapsed, err
}

// deleteServices deletes the phase's Services and waits until a list no
// longer returns any of them.
func deleteServices(ctx context.Context, client kubernetes.Interface, phase string, n, w int) error {
	svcs := client.CoreV1().Services(benchNamespace)
	if _, err := parallel(ctx, n, w, func(ctx context.Context, i int) error {
		err := svcs.Delete(ctx, serviceName(phase, i), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}
	for {
		l, err := svcs.List(ctx, metav1.ListOptions{LabelSelector: phaseLabel + "=" + phase})
		if err != nil {
			return err
		}
		if len(l.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d Services not gone: %w", len(l.Items), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// parallel runs f(0..n-1) on w goroutines and returns the wall time from
// releasing them until all calls returned, or the first error.
func parallel(ctx context.Context, n, w int, f func(context.Context, int) error) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int, n)
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
		start    = make(chan struct{})
	)
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range work {
				if ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("item %d: %w", i, err); cancel() })
					return
				}
			}
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	return elapsed, firstErr
}

// tracker follows phase B's Services through the informer.
type tracker struct {
	mu      sync.Mutex
	want    int
	t0      time.Time
	withIP  map[string]bool
	last    time.Time // when the last Service got its first ingress IP
	mods    map[string]int
	lastMod time.Time
	done    chan struct{}
}

func newTracker(want int) *tracker {
	return &tracker{want: want, withIP: map[string]bool{}, mods: map[string]int{}, done: make(chan struct{})}
}

func (t *tracker) start(t0 time.Time) {
	t.mu.Lock()
	t.t0 = t0
	t.mu.Unlock()
}

func (t *tracker) observe(obj, oldObj any) {
	now := time.Now()
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := oldObj.(*corev1.Service); ok && old.ResourceVersion != svc.ResourceVersion {
		t.mods[svc.Name]++
		t.lastMod = now
	}
	if t.withIP[svc.Name] || !hasIngressIP(svc) {
		return
	}
	t.withIP[svc.Name] = true
	if len(t.withIP) == t.want {
		t.last = now
		close(t.done)
	}
}

func (t *tracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.withIP)
}

func (t *tracker) modifications() (total, most int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range t.mods {
		total += n
		most = max(most, n)
	}
	return total, most
}

func (t *tracker) sinceLastMod() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Since(t.lastMod)
}

func hasIngressIP(svc *corev1.Service) bool {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return true
		}
	}
	return false
}

func settle(ctx context.Context, t *tracker, quiet, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && t.sinceLastMod() < quiet {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkIPs makes sure the figures are about a correct result: n Services,
// each with IPs from the pool, no IP handed out twice.
func checkIPs(objs []any, pool netip.Prefix, n int) error {
	if len(objs) != n {
		return fmt.Errorf("the informer holds %d Services, want %d", len(objs), n)
	}
	seen := map[netip.Addr]string{}
	for _, o := range objs {
		svc := o.(*corev1.Service)
		for _, in := range svc.Status.LoadBalancer.Ingress {
			ip, err := netip.ParseAddr(in.IP)
			if err != nil {
				return fmt.Errorf("service %s: ingress IP %q: %w", svc.Name, in.IP, err)
			}
			if !pool.Contains(ip) {
				return fmt.Errorf("service %s: ingress IP %s is outside the pool %s", svc.Name, ip, pool)
			}
			if other, dup := seen[ip]; dup {
				return fmt.Errorf("ingress IP %s given to both %s and %s", ip, other, svc.Name)
			}
			seen[ip] = svc.Name
		}
	}
	return nil
}

type agent struct {
	cmd     *exec.Cmd
	logPath string
	tmpDir  string
	exited  chan struct{}
	waitErr error
}

func startAgent(path, kubeconfig string, extra []string) (*agent, error) {
	tmp, err := os.MkdirTemp("", "herald-bench-")
	if err != nil {
		return nil, err
	}
	logFile, err := os.CreateTemp("", "herald-bench-agent-*.log")
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	args := append([]string{
		"--kubeconfig", kubeconfig,
		"--node-name", nodeName,
		"--k8s-namespace", leaseNamespace,
		"--dbg-socket", filepath.Join(tmp, "herald.sock"),
	}, extra...)
	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	logf("starting %s %s", path, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("starting herald-agent: %w", err)
	}
	a := &agent{cmd: cmd, logPath: logFile.Name(), tmpDir: tmp, exited: make(chan struct{})}
	go func() {
		a.waitErr = cmd.Wait()
		close(a.exited)
	}()
	return a, nil
}

// stop sends SIGTERM and waits for the agent to exit (SIGKILL after 15s).
func (a *agent) stop() error {
	select {
	case <-a.exited:
		return fmt.Errorf("herald-agent exited early: %v", a.waitErr)
	default:
	}
	logf("stopping herald-agent (pid %d)", a.cmd.Process.Pid)
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
		return nil
	case <-time.After(15 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.exited
		return errors.New("herald-agent did not stop within 15s of SIGTERM; killed")
	}
}

func waitLease(ctx context.Context, client kubernetes.Interface, a *agent) error {
	leases := client.CoordinationV1().Leases(leaseNamespace)
	for {
		l, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
		// The agent campaigns as "<node>_<uuid>", one identity per process.
		if err == nil && l.Spec.HolderIdentity != nil && strings.HasPrefix(*l.Spec.HolderIdentity, nodeName+"_") {
			return nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("lease %s/%s: %w", leaseNamespace, leaseName, err)
		}
		select {
		case <-a.exited:
			return fmt.Errorf("herald-agent exited before taking the Lease: %v", a.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("herald-agent did not take Lease %s/%s: %w", leaseNamespace, leaseName, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// procMem reads VmRSS and VmHWM (peak RSS), in KiB, from /proc/PID/status.
func procMem(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rss, err = strconv.ParseInt(f[1], 10, 64)
		case "VmHWM:":
			hwm, err = strconv.ParseInt(f[1], 10, 64)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %w", pid, err)
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
	}
	return rss, hwm, nil
}

// loadAvg returns the 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func printTable(o options, r result) {
	mib := func(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "services\tworkers\tapiserver alone (s)\twith Herald, all IPs (s)\tratio\tstatus writes\tagent VmRSS")
	fmt.Fprintf(tw, "%d\t%d\t%.3f\t%.3f\t%.2fx\t%d\t%s\n",
		o.services, o.workers, r.aCreates.Seconds(), r.bAllIPs.Seconds(),
		r.bAllIPs.Seconds()/r.aCreates.Seconds(), r.writes, mib(r.rssKiB))
	_ = tw.Flush()
	fmt.Printf("  apiserver alone: wall time until all %d Create calls returned, no agent running\n", o.services)
	fmt.Printf("  with Herald: first Create until the Service watch saw an ingress IP on all %d (their Create calls all returned after %.3fs)\n",
		o.services, r.bCreates.Seconds())
	fmt.Printf("  status writes: Service MODIFIED watch events in phase B = %.2f per Service, at most %d on one\n",
		float64(r.writes)/float64(o.services), r.maxWrites)
	fmt.Printf("  Events on the Services, one List after the status writes settled: %d (sent asynchronously through the same client rate limit; more may follow)\n", r.events)
	fmt.Printf("  agent: VmRSS %s, VmHWM (peak) %s after phase B; Lease taken %.3fs after exec\n",
		mib(r.rssKiB), mib(r.hwmKiB), r.agentStarted.Seconds())
	fmt.Printf("  host: %d CPUs; load average %s at the start, %s at the end\n", runtime.NumCPU(), r.loadStart, r.loadEnd)
	if o.agentArgs != "" {
		fmt.Printf("  agent extra flags: %s\n", o.agentArgs)
	}
}
