package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	cnitypes "github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/cnitest"
	"github.com/heraldlb/herald/test/ipamwatch"
)

// retryPause is how long a worker waits before it tries a failed ADD
// again with a new sandbox (kubelet backs off longer).
const retryPause = 200 * time.Millisecond

// scalePod is one Pod of the scale part and what happened to it.
type scalePod struct {
	cnitest.Pod
	node     *node
	created  time.Time     // its Create returned
	start    time.Time     // its first ADD began
	done     time.Time     // its ADD succeeded
	lat      time.Duration // of the ADD that succeeded
	attempts int
	addr     netip.Addr
}

// benchScale is part 2: 1000 Pods across 3 nodes from nothing, once with
// the IPAM plugin alone (the IPAM share), once with the whole ADD.
func benchScale(ctx context.Context, o options) error {
	for _, m := range strings.Split(o.scaleModes, ",") {
		switch m = strings.TrimSpace(m); m {
		case "ipam", "full":
			if err := scaleOnce(ctx, o, m == "full"); err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
		default:
			return fmt.Errorf("-scale-modes: unknown mode %q (ipam, full)", m)
		}
	}
	return nil
}

func scaleOnce(ctx context.Context, o options, full bool) error {
	what := "herald-ipam alone, exec'd as bridge does (the IPAM share)"
	if full {
		what = "loopback + bridge + herald-ipam through libcni"
	}
	fmt.Printf("\n== scale: %d Pods across %d nodes from nothing (no pool, no CIDRs), at most %d ADDs in flight per node: %s\n", o.pods, o.nodes, o.perNode, what)
	l, nodes, err := startScaleNodes(ctx, o, full)
	if err != nil {
		return err
	}
	defer l.close()
	netns, err := sandboxes(o.pods, full)
	if err != nil {
		return err
	}
	watch, err := ipamwatch.Start(ctx, l.herald)
	if err != nil {
		return err
	}
	time.Sleep(settle)

	r := newScaleRun(o, nodes, full)
	r.startRuntimes(ctx)
	m, err := r.measure(ctx, l, netns)
	if err != nil {
		return err
	}
	if err := r.verify(watch); err != nil {
		return err
	}
	r.report(m, watch)
	return nil
}

// startScaleNodes starts the lab and an agent on every node, and waits
// until each has its CiliumNode (asking for nothing) and one leads the pod
// CIDR allocator. The IPAM plugin alone needs the bridge made for it.
func startScaleNodes(ctx context.Context, o options, full bool) (l *lab, nodes []*node, err error) {
	var hosts []string
	for i := 1; i <= o.nodes; i++ {
		hosts = append(hosts, fmt.Sprintf("node%d", i))
	}
	if l, err = newLab(ctx, hosts...); err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	for _, h := range hosts {
		n, err := l.startNode(h, strings.Fields(o.agentArgs)...)
		if err != nil {
			return nil, nil, err
		}
		if !full {
			if err := l.ensureBridge(n); err != nil {
				return nil, nil, err
			}
		}
		nodes = append(nodes, n)
	}
	err = l.waitFor(ctx, 2*time.Minute, 100*time.Millisecond, func() (bool, string) {
		for _, n := range nodes {
			if _, err := l.herald.CiliumV2().CiliumNodes().Get(ctx, n.name, metav1.GetOptions{}); err != nil {
				return false, fmt.Sprintf("CiliumNode %s: %v", n.name, err)
			}
		}
		lease, err := l.c.Client.CoordinationV1().Leases(leaseNS).Get(ctx, tables.PodIPAMLease, metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return false, fmt.Sprintf("nobody holds %s (%v)", tables.PodIPAMLease, err)
		}
		return true, ""
	})
	if err != nil {
		return nil, nil, err
	}
	return l, nodes, nil
}

// sandboxes names the Pods' network namespaces, and creates them for the
// whole ADD (the runtime's work, not timed); the IPAM plugin alone does not
// enter them.
func sandboxes(pods int, full bool) ([]string, error) {
	netns := make([]string, pods)
	for i := range netns {
		netns[i] = filepath.Join(cnitest.NetnsDir, fmt.Sprintf("%s%d", podPrefix, i))
	}
	if full {
		t := time.Now()
		if _, err := createNetns(pods, 0); err != nil {
			return nil, err
		}
		logf("%d pod namespaces created in %s (not timed: the runtime's work)", pods, secs(time.Since(t)))
	}
	return netns, nil
}

// scaleRun is one run of the scale part: the Pods, each node's runtime
// that ADDs them, and what failed.
type scaleRun struct {
	o        options
	nodes    []*node
	add      func(context.Context, *node, cnitest.Pod) (*current.Result, error)
	del      func(context.Context, *node, cnitest.Pod) error
	pods     []*scalePod
	queues   map[string]chan *scalePod
	wg       sync.WaitGroup
	mu       sync.Mutex
	failures map[string]int // by CNI error code and message start
	firstErr error
}

func newScaleRun(o options, nodes []*node, full bool) *scaleRun {
	r := &scaleRun{o: o, nodes: nodes, pods: make([]*scalePod, o.pods), queues: map[string]chan *scalePod{}, failures: map[string]int{},
		add: func(ctx context.Context, n *node, p cnitest.Pod) (*current.Result, error) {
			return n.rt.DelegateAdd(ctx, p)
		},
		del: func(ctx context.Context, n *node, p cnitest.Pod) error { return n.rt.DelegateDel(ctx, p) },
	}
	if full {
		r.add = func(ctx context.Context, n *node, p cnitest.Pod) (*current.Result, error) { return n.rt.Add(ctx, p) }
		r.del = func(ctx context.Context, n *node, p cnitest.Pod) error { return n.rt.Del(ctx, p) }
	}
	for _, n := range nodes {
		r.queues[n.name] = make(chan *scalePod, o.pods)
	}
	return r
}

// startRuntimes starts each node's runtime: per-node workers, each ADD as
// soon as the Pod is there.
func (r *scaleRun) startRuntimes(ctx context.Context) {
	for _, n := range r.nodes {
		for range r.o.perNode {
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				for p := range r.queues[n.name] {
					r.addPod(ctx, n, p)
				}
			}()
		}
	}
}

// addPod ADDs one Pod; a failed ADD is cleaned up with a DEL and tried
// again with a new sandbox ID, as kubelet does.
func (r *scaleRun) addPod(ctx context.Context, n *node, p *scalePod) {
	p.start = time.Now()
	for {
		p.attempts++
		actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		at := time.Now()
		res, err := r.add(actx, n, p.Pod)
		cancel()
		if err == nil {
			p.done, p.lat = time.Now(), time.Since(at)
			p.addr, _ = netip.AddrFromSlice(res.IPs[0].Address.IP)
			p.addr = p.addr.Unmap()
			return
		}
		r.mu.Lock()
		r.failures[failureKind(err)]++
		r.mu.Unlock()
		_ = r.del(ctx, n, p.Pod)
		if died := n.agent.UnexpectedExit(); died != "" {
			// No kubelet restarts it here: the run is broken.
			err = fmt.Errorf("%s: %w", died, err)
			p.attempts = 20
		}
		if ctx.Err() != nil || p.attempts >= 20 {
			r.mu.Lock()
			if r.firstErr == nil {
				r.firstErr = fmt.Errorf("pod %s on %s: %d ADDs failed, the last: %w", p.Name, n.name, p.attempts, err)
			}
			r.mu.Unlock()
			return
		}
		time.Sleep(retryPause)
		p.ContainerID = fmt.Sprintf("%s-r%d", p.ContainerID, p.attempts)
	}
}

// scaleMeasure is what a run measured: the moments from t0 (the pool's
// Create), the CPU used until the last ADD, the API requests until
// settled.
type scaleMeasure struct {
	t0, pool, created, done, settled time.Time
	cpu                              cpuUse
	api                              cluster.RequestCounts
}

// measure creates the pool, then the Pods by 10 clients, each handed to its
// node's runtime as its Create returns, and waits for every ADD.
func (r *scaleRun) measure(ctx context.Context, l *lab, netns []string) (scaleMeasure, error) {
	var m scaleMeasure
	c0, err := l.c.RequestCounts(ctx)
	if err != nil {
		return m, err
	}
	cpu0 := l.cpu()
	m.t0 = time.Now()
	if err := l.createPool(ctx, r.o.scaleMask); err != nil {
		return m, err
	}
	m.pool = time.Now()
	nodeOf := func(i int) *node { return r.nodes[i%len(r.nodes)] }
	err = l.createPods(ctx, r.o.pods, 10, func(i int) string { return fmt.Sprintf("p-%04d", i) },
		func(i int) string { return nodeOf(i).name },
		func(i int, obj *corev1.Pod) {
			p := &scalePod{node: nodeOf(i), created: time.Now(), Pod: cnitest.Pod{Namespace: obj.Namespace, Name: obj.Name, UID: string(obj.UID),
				ContainerID: fmt.Sprintf("sandbox-%04d", i), Netns: netns[i]}}
			r.pods[i] = p
			r.queues[p.node.name] <- p
		})
	m.created = time.Now()
	for _, q := range r.queues {
		close(q)
	}
	r.wg.Wait()
	m.done = time.Now()
	m.cpu = l.cpu().since(cpu0)
	if err != nil {
		return m, err
	}
	if r.firstErr != nil {
		return m, fmt.Errorf("%w\n%s", r.firstErr, l.agentLogs())
	}
	time.Sleep(settle)
	c1, err := l.c.RequestCounts(ctx)
	if err != nil {
		return m, err
	}
	m.settled, m.api = time.Now(), c1.Sub(c0)
	return m, nil
}

// verify checks every address is given once, every Pod's address is in its
// node's CIDRs, and no CIDR was ever on two nodes.
func (r *scaleRun) verify(watch *ipamwatch.Watcher) error {
	owner := map[netip.Addr]string{}
	for _, p := range r.pods {
		if o, dup := owner[p.addr]; dup {
			return fmt.Errorf("%s has %s, and so has %s", p.Name, p.addr, o)
		}
		owner[p.addr] = p.Name
	}
	if vs := watch.Violations(); len(vs) > 0 {
		return fmt.Errorf("CIDRs on two nodes:\n%s", strings.Join(vs, "\n"))
	}
	alloc := watch.Allocated()
	for _, p := range r.pods {
		if !inAny(p.addr, alloc[p.node.name]) {
			return fmt.Errorf("%s's address %s is in none of %s's CIDRs %v", p.Name, p.addr, p.node.name, alloc[p.node.name])
		}
	}
	return nil
}

// report prints the run's figures.
func (r *scaleRun) report(m scaleMeasure, watch *ipamwatch.Watcher) {
	var last time.Time
	for _, p := range r.pods {
		if p.done.After(last) {
			last = p.done
		}
	}
	fmt.Printf("pool %s /%d created at t0 (Create returned after %s); %d Pods created by 10 clients, the last at t0+%s\n",
		poolCIDR, r.o.scaleMask, ms(m.pool.Sub(m.t0)), r.o.pods, secs(m.created.Sub(m.t0)))
	fmt.Printf("every Pod had its address at t0+%s (the last ADD returned; workers done at t0+%s)\n", secs(last.Sub(m.t0)), secs(m.done.Sub(m.t0)))
	alloc := watch.Allocated()
	cidrs := 0
	for _, n := range r.nodes {
		cidrs += len(alloc[n.name])
		first, _ := watch.FirstCIDRAt(n.name)
		count := 0
		for _, p := range r.pods {
			if p.node == n {
				count++
			}
		}
		fmt.Printf("  %s: %d Pods, CIDRs %v, first CIDR seen by a watch at t0+%s\n", n.name, count, alloc[n.name], ms(first.Sub(m.t0)))
	}
	fmt.Printf("CIDRs allocated: %d\n", cidrs)
	fmt.Printf("CPU time from t0 until the last ADD: %s\n", m.cpu.describe(m.done.Sub(m.t0)))
	r.reportLatencies(m.t0)
	cn := m.api.Filter(func(k cluster.RequestKey) bool { return k.Resource == "ciliumnodes" && k.Write() })
	fmt.Printf("CiliumNode writes from t0 to %s after the last ADD: %.0f (%s); %d watch events on CiliumNodes\n",
		secs(settle), cn.Total(), describe(cn), watch.Events())
	fmt.Printf("API requests in that window (%s; every client, %d Pod Creates are the benchmark's):\n", secs(m.settled.Sub(m.t0)), r.o.pods)
	printRequests([]string{"t0..end"}, m.api)
}

// reportLatencies prints the ADDs' latencies and the retries.
func (r *scaleRun) reportLatencies(t0 time.Time) {
	var adds, waits, ends []time.Duration
	retried := 0
	for _, p := range r.pods {
		adds = append(adds, p.lat)
		waits = append(waits, p.done.Sub(p.created))
		ends = append(ends, p.done.Sub(t0))
		if p.attempts > 1 {
			retried++
		}
	}
	printLatencyHeader("under load")
	printLatency("ADD that succeeded", adds, ms)
	printLatency("Pod created -> its ADD returned (incl. queueing)", waits, ms)
	printLatency("t0 -> Pod has its address", ends, secs)
	fmt.Printf("ADDs that failed and were retried: %d Pods needed more than one ADD", retried)
	if len(r.failures) > 0 {
		var ks []string
		for k, v := range r.failures {
			ks = append(ks, fmt.Sprintf("%d x %s", v, k))
		}
		sort.Strings(ks)
		fmt.Printf(": %s", strings.Join(ks, "; "))
	}
	fmt.Println()
}

// failureKind names an ADD error for counting: its CNI code and the start
// of its message.
func failureKind(err error) string {
	var e *cnitypes.Error
	if errors.As(err, &e) {
		msg := e.Msg
		if len(msg) > 60 {
			msg = msg[:60] + "..."
		}
		return fmt.Sprintf("CNI error %d (%s)", e.Code, msg)
	}
	s := err.Error()
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return s
}

// inAny reports whether a lies in one of the "pool=cidr" strings.
func inAny(a netip.Addr, held []string) bool {
	for _, h := range held {
		_, c, _ := strings.Cut(h, "=")
		if p, err := netip.ParsePrefix(c); err == nil && p.Contains(a) {
			return true
		}
	}
	return false
}
