// Command bench-ipam measures multi-pool pod IPAM against a real etcd +
// kube-apiserver (test/cluster), herald-agent processes in network
// namespaces on a test LAN (test/agentproc, test/netlab) and the real CNI
// plugins driven through libcni as a container runtime drives them
// (test/cnitest). Each part runs on a fresh control plane and LAN:
//
//   - chain: the same network, the bridge plugin and its IPAM plugin,
//     with host-local and with herald-ipam (and, with -baseline-ref, with
//     the herald-ipam and agent of another revision on a second node), on
//     one machine in one run: 1000 sequential ADDs and DELs of each, in
//     interleaved blocks of 100; then the IPAM plugins alone, exec'd as
//     bridge execs them. Percentiles of each and their ratios to
//     host-local's.
//   - add: one node whose CIDR of the default pool is already there; 1000
//     Pods exist and are in the agent's pods table; 1000 sequential ADDs
//     (and DELs) of: the agent alone (the plugin's request on its socket),
//     herald-ipam alone, exec'd as bridge execs its IPAM plugin (the IPAM
//     share of an ADD), and loopback + bridge + herald-ipam through libcni.
//     Latency percentiles, CPU time, and the API server's request counters
//     over each series next to an idle window.
//   - scale: three nodes, no pool and no CIDRs; at t0 the default pool is
//     created, then 1000 Pods spread over the nodes, each wired up as soon
//     as its Create returned, at most 10 ADDs in flight per node (as
//     kubelet runs them): once with herald-ipam alone, once with the whole
//     ADD. Time until every Pod has an address, CIDRs allocated,
//     CiliumNode writes, ADD latency under that load.
//   - allocator: one agent leading herald-pod-ipam and 1000 fake nodes
//     (a Node and a CiliumNode asking for addresses of the default pool
//     each): (A) the agent starts when all 1000 exist, (B) 1000 more are
//     created while it leads. Time until every CiliumNode lists a CIDR,
//     and the API writes it took.
//   - engine: the allocator's decision logic alone (cells/podipam/cidrallocator Engine,
//     in this process) for growing numbers of nodes.
//
// Nothing here is asserted: the figures are printed. Broken promises (an
// address or CIDR given twice, a Pod without an address) end the run with
// an error.
//
// Needs root. Every namespace and interface is named hbi-*; addresses come
// from 198.18.0.0/15 (the LAN 198.18.9.0/24, pools in 198.19.0.0/16);
// everything is removed at the end, and at the start when an interrupted
// run left it.
//
//	go build -o _output/bin/bench-ipam ./test/bench/cmd/bench-ipam
//	_output/bin/bench-ipam -parts chain,add,scale,allocator,engine -baseline-ref main
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/cnitest"
	"github.com/heraldlb/herald/test/netlab"
)

const (
	// prefix names every namespace and interface of the benchmark.
	prefix = "hbi-"
	// podPrefix names the pods' network namespaces.
	podPrefix = prefix + "p-"
	leaseNS   = metav1.NamespaceSystem
	benchNS   = "bench"
	// poolCIDR is the default pool's only CIDR.
	poolCIDR = "198.19.0.0/16"
)

// subnet is the LAN the nodes and the API server share.
var subnet = netip.MustParsePrefix("198.18.9.0/24")

type options struct {
	parts       string
	adds        int
	addMask     int
	pods        int
	nodes       int
	perNode     int
	scaleMask   int
	scaleModes  string
	fakes       int
	workers     int
	allocMask   int
	agentArgs   string
	engineN     string
	cpuProf     string
	chainAdds   int
	chainBlock  int
	baselineRef string
}

func main() {
	var o options
	flag.StringVar(&o.parts, "parts", "chain,add,scale,allocator,engine", "parts to run, comma separated: chain, add, scale, allocator, engine")
	flag.IntVar(&o.adds, "adds", 1000, "add: sequential ADDs of each kind")
	flag.IntVar(&o.addMask, "add-mask", 21, "add: mask size of the default pool (one CIDR must hold every Pod: /21 has 2045 usable addresses)")
	flag.IntVar(&o.pods, "pods", 1000, "scale: Pods")
	flag.IntVar(&o.nodes, "nodes", 3, "scale: nodes")
	flag.IntVar(&o.perNode, "per-node", 10, "scale: ADDs in flight per node")
	flag.IntVar(&o.scaleMask, "scale-mask", 24, "scale: mask size of the default pool")
	flag.StringVar(&o.scaleModes, "scale-modes", "ipam,full", "scale: ADDs to run, each on a fresh cluster: ipam (herald-ipam alone, the IPAM share), full (loopback + bridge + herald-ipam through libcni)")
	flag.IntVar(&o.fakes, "cilium-nodes", 1000, "allocator: fake nodes per phase")
	flag.IntVar(&o.workers, "create-workers", 20, "allocator: concurrent clients creating the fake nodes")
	flag.IntVar(&o.allocMask, "allocator-mask", 27, "allocator: mask size of the default pool (2 x cilium-nodes CIDRs must fit in "+poolCIDR+")")
	flag.StringVar(&o.agentArgs, "agent-args", "", "extra herald-agent flags, space separated (e.g. \"--k8s-client-qps=1000 --k8s-client-burst=2000\")")
	flag.StringVar(&o.engineN, "engine-nodes", "500,1000,2000", "engine: node counts for the allocator's engine alone, comma separated")
	flag.IntVar(&o.chainAdds, "chain-adds", 1000, "chain: sequential ADDs (and DELs) of each IPAM plugin")
	flag.IntVar(&o.chainBlock, "chain-block", 100, "chain: ADDs of one plugin in a row before the next plugin's block")
	flag.StringVar(&o.baselineRef, "baseline-ref", "", "chain: also run herald-ipam and herald-agent built from this git revision (e.g. main), on a second node")
	flag.StringVar(&o.cpuProf, "cpuprofile", "", "write a CPU profile of this process (e.g. of -parts engine) to the file")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "bench-ipam: needs root (network namespaces, CNI plugins)")
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-ipam:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	unlock, err := netlab.Lock("bench-ipam")
	if err != nil {
		return err
	}
	defer unlock()
	if o.cpuProf != "" {
		f, err := os.Create(o.cpuProf)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	parts := map[string]func(context.Context, options) error{"chain": benchChain, "add": benchAdd, "scale": benchScale, "allocator": benchAllocator, "engine": benchEngine}
	var order []string
	for _, p := range strings.Split(o.parts, ",") {
		p = strings.TrimSpace(p)
		if parts[p] == nil {
			return fmt.Errorf("-parts: unknown part %q (chain, add, scale, allocator, engine)", p)
		}
		order = append(order, p)
	}
	fmt.Printf("bench-ipam: %s; %s\n", machine(), o.summary())
	for _, p := range order {
		load0 := loadAvg()
		if err := parts[p](ctx, o); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		fmt.Printf("(load average before the part %s, after it %s)\n", load0, loadAvg())
	}
	return nil
}

func (o options) summary() string {
	s := fmt.Sprintf("kube-apiserver %s", cluster.KubeVersion)
	if v := os.Getenv(cluster.EnvKubeVersion); v != "" {
		s = "kube-apiserver " + v
	}
	if o.agentArgs != "" {
		s += fmt.Sprintf("; agent flags %q", o.agentArgs)
	}
	return s
}

// machine describes the host: CPUs, CPU model, kernel, load.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "?"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%d CPUs (%s), kernel %s, load average %s", numCPU(), model, kernel, loadAvg())
}

func loadAvg() string {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		return strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return "?"
}

func numCPU() int {
	n := 0
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "processor") {
				n++
			}
		}
	}
	return n
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-ipam: %s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// lab is one part's world: a LAN of node namespaces, a control plane bound
// to the LAN, the binaries, and what to remove at the end.
type lab struct {
	work                      string
	lan                       *netlab.LAN
	c                         *cluster.Cluster
	herald                    versioned.Interface
	agentBin, dbgBin, ipamBin string
	agents                    []*agentproc.Agent
	teardown                  []func()
}

// newLab builds the LAN with the given hosts, starts the control plane,
// installs the CRDs and creates a Node for every host. Call close.
func newLab(ctx context.Context, hosts ...string) (l *lab, err error) {
	l = &lab{}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if _, err := cnitest.RequirePlugins(); err != nil {
		return nil, err
	}
	root := cluster.RepoRoot()
	if root == "" {
		return nil, errors.New("run me from inside the repository")
	}
	if l.work, err = os.MkdirTemp("", prefix); err != nil {
		return nil, err
	}
	l.teardown = append(l.teardown, func() { _ = os.RemoveAll(l.work) })
	if l.agentBin, l.dbgBin, err = agentproc.Build(root, filepath.Join(l.work, "bin")); err != nil {
		return nil, err
	}
	if l.ipamBin, err = cnitest.BuildHeraldIPAM(filepath.Join(l.work, "cni-bin")); err != nil {
		return nil, err
	}
	// Setup removes what an interrupted run left: the root veth and every
	// namespace named hbi-*, pods' included.
	if l.lan, err = netlab.New(prefix, subnet); err != nil {
		return nil, err
	}
	l.teardown = append(l.teardown, func() {
		for _, err := range l.lan.Teardown() {
			logf("teardown: %v", err)
		}
	})
	if err := l.lan.Setup(hosts...); err != nil {
		return nil, fmt.Errorf("building the LAN: %w", err)
	}
	if l.c, err = cluster.Start(cluster.Options{Addr: l.lan.RootIP().String()}); err != nil {
		return nil, err
	}
	l.teardown = append(l.teardown, l.c.Stop)
	if l.herald, err = versioned.NewForConfig(l.c.RESTConfig); err != nil {
		return nil, err
	}
	if err := l.c.InstallCRDs(ctx, filepath.Join(root, "install", "crds")); err != nil {
		return nil, fmt.Errorf("installing CRDs: %w", err)
	}
	for _, ns := range []string{leaseNS, benchNS} {
		if _, err := l.c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	for _, name := range hosts {
		if err := l.createNode(ctx, name, l.lan.Host(name).IP.String()); err != nil {
			return nil, err
		}
	}
	l.teardown = append(l.teardown, func() {
		for _, a := range l.agents {
			if err := a.Stop(); err != nil {
				logf("teardown: %v", err)
			}
		}
	})
	return l, nil
}

// close stops the agents and the control plane and removes the LAN, the
// pods' namespaces and the work directory.
func (l *lab) close() {
	for i := len(l.teardown) - 1; i >= 0; i-- {
		l.teardown[i]()
	}
	l.teardown = nil
}

// createNode creates a Node with an InternalIP.
func (l *lab) createNode(ctx context.Context, name, ip string) error {
	n, err := l.c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	_, err = l.c.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// createPool creates the default pool: IPv4 only, poolCIDR cut into
// CIDRs of the mask size.
func (l *lab) createPool(ctx context.Context, mask int) error {
	p := &v2alpha1.CiliumPodIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: tables.DefaultPodIPPool},
		Spec: v2alpha1.IPPoolSpec{IPv4: &v2alpha1.IPv4PoolSpec{
			CIDRs: []v2alpha1.PoolCIDR{poolCIDR}, MaskSize: uint8(mask),
		}},
	}
	_, err := l.herald.CiliumV2alpha1().CiliumPodIPPools().Create(ctx, p, metav1.CreateOptions{})
	return err
}

// node is a node namespace running an agent, and the container runtime's
// view of its pod network.
type node struct {
	name     string
	dir      string
	agent    *agentproc.Agent
	rt       *cnitest.Runtime
	socket   string
	stateDir string
}

// startNode starts the agent of a host with multi-pool IPAM (IPv4) and
// prepares its runtime, with the binaries of this tree.
func (l *lab) startNode(name string, extra ...string) (*node, error) {
	return l.startNodeWith(name, binaries{agent: l.agentBin, dbg: l.dbgBin, ipam: l.ipamBin}, extra...)
}

// binaries are one build of herald-agent, herald-dbg and herald-ipam.
type binaries struct{ agent, dbg, ipam string }

// startNodeWith is startNode with the binaries of another build (a
// baseline to compare with).
func (l *lab) startNodeWith(name string, bins binaries, extra ...string) (*node, error) {
	h := l.lan.Host(name)
	n := &node{name: name, dir: filepath.Join(l.work, name)}
	n.socket = filepath.Join(n.dir, "ipam.sock")
	n.stateDir = filepath.Join(n.dir, "state")
	args := append([]string{"--ipam=multi-pool", "--ipam-socket=" + n.socket, "--ipam-state-dir=" + n.stateDir}, extra...)
	n.agent = agentproc.New(agentproc.Options{
		Name: name, Netns: h.Netns, Dir: n.dir, AgentBin: bins.agent, DbgBin: bins.dbg,
		Kubeconfig: l.c.Kubeconfig, Namespace: leaseNS, Args: args,
	})
	if err := n.agent.Start(); err != nil {
		return nil, err
	}
	l.agents = append(l.agents, n.agent)
	conf, err := cnitest.BridgeNetwork{Bridge: "cni0", IsGateway: false, IPAM: map[string]any{"socket": n.socket, "stateDir": n.stateDir}}.Conflist()
	if err != nil {
		return nil, err
	}
	cache := filepath.Join(n.dir, "cni-cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	n.rt, err = cnitest.NewRuntime(cnitest.RuntimeOptions{
		Conflist: conf, NodeNetns: filepath.Join(cnitest.NetnsDir, h.Netns),
		PluginDirs: []string{cnitest.PluginsDir(), filepath.Dir(bins.ipam)}, CacheDir: cache,
	})
	return n, err
}

// ensureBridge creates the node's bridge as the bridge plugin's first ADD
// would: the agent puts the gateway of the Pod's CIDR on it in every ADD,
// also when herald-ipam runs alone.
func (l *lab) ensureBridge(n *node) error {
	ns := l.lan.Host(n.name).Netns
	if exec.Command("ip", "-n", ns, "link", "show", "cni0").Run() == nil {
		return nil
	}
	for _, args := range [][]string{{"-n", ns, "link", "add", "cni0", "type", "bridge"}, {"-n", ns, "link", "set", "cni0", "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// waitFor polls cond every interval until it holds, ctx ends or within
// passes; agents that died are named in the error.
func (l *lab) waitFor(ctx context.Context, within, interval time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(within)
	for {
		ok, seen := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %s: %s%s", within, seen, agentproc.UnexpectedExits(l.agents...))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// agentLogs is the end of every agent's log, for an error message.
func (l *lab) agentLogs() string {
	var b strings.Builder
	for _, a := range l.agents {
		b.WriteString(a.Logs(40))
	}
	return b.String()
}

// createPods creates Pods bench/<name(i)> on the nodes node(i) picks, with
// workers concurrent clients, and calls created (from any goroutine) with
// each one as its Create returns.
func (l *lab) createPods(ctx context.Context, count, workers int, name func(int) string, nodeOf func(int) string, created func(i int, p *corev1.Pod)) error {
	idx := make(chan int)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				obj := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: benchNS},
					Spec:       corev1.PodSpec{NodeName: nodeOf(i), Containers: []corev1.Container{{Name: "c", Image: "none"}}},
				}
				p, err := l.c.Client.CoreV1().Pods(benchNS).Create(ctx, obj, metav1.CreateOptions{})
				if err != nil {
					errc <- fmt.Errorf("creating pod %s: %w", obj.Name, err)
					return
				}
				created(i, p)
			}
		}()
	}
	var err error
feed:
	for i := range count {
		select {
		case idx <- i:
		case err = <-errc:
			break feed
		}
	}
	close(idx)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return err
}

// createNetns creates count pod namespaces hbi-p-<base+i>, 8 at a time.
func createNetns(count, base int) ([]*cnitest.Netns, error) {
	out := make([]*cnitest.Netns, count)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	idx := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				ns, err := cnitest.NewNetns(fmt.Sprintf("%s%d", podPrefix, base+i))
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out[i] = ns
				mu.Unlock()
			}
		}()
	}
	for i := range count {
		idx <- i
	}
	close(idx)
	wg.Wait()
	return out, firstErr
}

// --- figures ---

// quantile is the p-quantile of sorted durations (nearest rank).
func quantile(ds []time.Duration, p float64) time.Duration {
	i := int(p*float64(len(ds))+0.5) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

const latencyHeader = "%-52s %6s %9s %9s %9s %9s %9s\n"

func printLatencyHeader(what string) {
	fmt.Printf(latencyHeader, what, "n", "p50", "p90", "p99", "max", "mean")
}

// printLatency prints percentiles of ds, in milliseconds or seconds.
func printLatency(name string, ds []time.Duration, unit func(time.Duration) string) {
	if len(ds) == 0 {
		fmt.Printf("%-52s %6d\n", name, 0)
		return
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	fmt.Printf(latencyHeader, name, fmt.Sprint(len(s)), unit(quantile(s, 0.50)), unit(quantile(s, 0.90)),
		unit(quantile(s, 0.99)), unit(s[len(s)-1]), unit(sum/time.Duration(len(s))))
}

// printRequests prints API request counts of windows side by side, one
// row per kind of request seen in any of them.
func printRequests(names []string, windows ...cluster.RequestCounts) {
	all := cluster.RequestCounts{}
	for _, w := range windows {
		for k, v := range w {
			all[k] += v
		}
	}
	fmt.Printf("  %-40s", "request (apiserver_request_total)")
	for _, n := range names {
		fmt.Printf(" %14s", n)
	}
	fmt.Println()
	if len(all) == 0 {
		fmt.Println("  (none)")
		return
	}
	for _, k := range all.Keys() {
		fmt.Printf("  %-40s", k.String())
		for _, w := range windows {
			fmt.Printf(" %14.0f", w[k])
		}
		fmt.Println()
	}
}

// isLease tells the elections' Lease traffic apart.
func isLease(k cluster.RequestKey) bool { return k.Resource == "leases" }
