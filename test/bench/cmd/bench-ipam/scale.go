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
	var hosts []string
	for i := 1; i <= o.nodes; i++ {
		hosts = append(hosts, fmt.Sprintf("node%d", i))
	}
	l, err := newLab(ctx, hosts...)
	if err != nil {
		return err
	}
	defer l.close()
	var nodes []*node
	for _, h := range hosts {
		n, err := l.startNode(h, strings.Fields(o.agentArgs)...)
		if err != nil {
			return err
		}
		if !full {
			if err := l.ensureBridge(n); err != nil {
				return err
			}
		}
		nodes = append(nodes, n)
	}
	// Every agent runs (its CiliumNode exists, asking for nothing) and
	// one leads the pod CIDR allocator.
	if err := l.waitFor(ctx, 2*time.Minute, 100*time.Millisecond, func() (bool, string) {
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
	}); err != nil {
		return err
	}
	// The sandboxes' namespaces: the runtime's work, not timed. The IPAM
	// plugin alone does not enter them.
	netns := make([]string, o.pods)
	for i := range netns {
		netns[i] = filepath.Join(cnitest.NetnsDir, fmt.Sprintf("%s%d", podPrefix, i))
	}
	if full {
		t := time.Now()
		if _, err := createNetns(o.pods, 0); err != nil {
			return err
		}
		logf("%d pod namespaces created in %s (not timed: the runtime's work)", o.pods, secs(time.Since(t)))
	}
	add, del := func(ctx context.Context, n *node, p cnitest.Pod) (*current.Result, error) {
		return n.rt.DelegateAdd(ctx, p)
	},
		func(ctx context.Context, n *node, p cnitest.Pod) error { return n.rt.DelegateDel(ctx, p) }
	if full {
		add, del = func(ctx context.Context, n *node, p cnitest.Pod) (*current.Result, error) { return n.rt.Add(ctx, p) },
			func(ctx context.Context, n *node, p cnitest.Pod) error { return n.rt.Del(ctx, p) }
	}
	watch, err := ipamwatch.Start(ctx, l.herald)
	if err != nil {
		return err
	}
	time.Sleep(settle)

	pods := make([]*scalePod, o.pods)
	queues := map[string]chan *scalePod{}
	for _, n := range nodes {
		queues[n.name] = make(chan *scalePod, o.pods)
	}
	var (
		mu       sync.Mutex
		failures = map[string]int{} // by CNI error code and message start
		wg       sync.WaitGroup
		firstErr error
	)
	// The runtime of each node: per-node workers, each ADD as soon as the
	// Pod is there; a failed ADD is cleaned up with a DEL and tried again
	// with a new sandbox ID, as kubelet does.
	for _, n := range nodes {
		for range o.perNode {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for p := range queues[n.name] {
					p.start = time.Now()
					for {
						p.attempts++
						actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
						at := time.Now()
						res, err := add(actx, n, p.Pod)
						cancel()
						if err == nil {
							p.done, p.lat = time.Now(), time.Since(at)
							p.addr, _ = netip.AddrFromSlice(res.IPs[0].Address.IP)
							p.addr = p.addr.Unmap()
							break
						}
						mu.Lock()
						failures[failureKind(err)]++
						mu.Unlock()
						_ = del(ctx, n, p.Pod)
						if died := n.agent.UnexpectedExit(); died != "" {
							// No kubelet restarts it here: the run is broken.
							err = fmt.Errorf("%s: %w", died, err)
							p.attempts = 20
						}
						if ctx.Err() != nil || p.attempts >= 20 {
							mu.Lock()
							if firstErr == nil {
								firstErr = fmt.Errorf("pod %s on %s: %d ADDs failed, the last: %w", p.Name, n.name, p.attempts, err)
							}
							mu.Unlock()
							break
						}
						time.Sleep(retryPause)
						p.ContainerID = fmt.Sprintf("%s-r%d", p.ContainerID, p.attempts)
					}
				}
			}()
		}
	}

	c0, err := l.c.RequestCounts(ctx)
	if err != nil {
		return err
	}
	cpu0 := l.cpu()
	t0 := time.Now()
	if err := l.createPool(ctx, o.scaleMask); err != nil {
		return err
	}
	tPool := time.Now()
	err = l.createPods(ctx, o.pods, 10, func(i int) string { return fmt.Sprintf("p-%04d", i) },
		func(i int) string { return nodes[i%len(nodes)].name },
		func(i int, obj *corev1.Pod) {
			n := nodes[i%len(nodes)]
			p := &scalePod{node: n, created: time.Now(), Pod: cnitest.Pod{Namespace: obj.Namespace, Name: obj.Name, UID: string(obj.UID),
				ContainerID: fmt.Sprintf("sandbox-%04d", i), Netns: netns[i]}}
			pods[i] = p
			queues[n.name] <- p
		})
	tCreated := time.Now()
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	tDone := time.Now()
	cpu := l.cpu().since(cpu0)
	if err != nil {
		return err
	}
	if firstErr != nil {
		return fmt.Errorf("%w\n%s", firstErr, l.agentLogs())
	}
	time.Sleep(settle)
	c1, err := l.c.RequestCounts(ctx)
	if err != nil {
		return err
	}
	tC1 := time.Now()
	api := c1.Sub(c0)

	// Every address once; every Pod's address in its node's CIDRs.
	owner := map[netip.Addr]string{}
	var last time.Time
	for _, p := range pods {
		if o, dup := owner[p.addr]; dup {
			return fmt.Errorf("%s has %s, and so has %s", p.Name, p.addr, o)
		}
		owner[p.addr] = p.Name
		if p.done.After(last) {
			last = p.done
		}
	}
	if vs := watch.Violations(); len(vs) > 0 {
		return fmt.Errorf("CIDRs on two nodes:\n%s", strings.Join(vs, "\n"))
	}
	alloc := watch.Allocated()
	cidrs := 0
	for _, n := range nodes {
		cidrs += len(alloc[n.name])
		for _, p := range pods {
			if p.node == n && !inAny(p.addr, alloc[n.name]) {
				return fmt.Errorf("%s's address %s is in none of %s's CIDRs %v", p.Name, p.addr, n.name, alloc[n.name])
			}
		}
	}

	// Figures.
	fmt.Printf("pool %s /%d created at t0 (Create returned after %s); %d Pods created by 10 clients, the last at t0+%s\n",
		poolCIDR, o.scaleMask, ms(tPool.Sub(t0)), o.pods, secs(tCreated.Sub(t0)))
	fmt.Printf("every Pod had its address at t0+%s (the last ADD returned; workers done at t0+%s)\n", secs(last.Sub(t0)), secs(tDone.Sub(t0)))
	for _, n := range nodes {
		first, _ := watch.FirstCIDRAt(n.name)
		count := 0
		for _, p := range pods {
			if p.node == n {
				count++
			}
		}
		fmt.Printf("  %s: %d Pods, CIDRs %v, first CIDR seen by a watch at t0+%s\n", n.name, count, alloc[n.name], ms(first.Sub(t0)))
	}
	fmt.Printf("CIDRs allocated: %d\n", cidrs)
	fmt.Printf("CPU time from t0 until the last ADD: %s\n", cpu.describe(tDone.Sub(t0)))
	var adds, waits, ends []time.Duration
	retried := 0
	for _, p := range pods {
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
	if len(failures) > 0 {
		var ks []string
		for k, v := range failures {
			ks = append(ks, fmt.Sprintf("%d x %s", v, k))
		}
		sort.Strings(ks)
		fmt.Printf(": %s", strings.Join(ks, "; "))
	}
	fmt.Println()
	cn := api.Filter(func(k cluster.RequestKey) bool { return k.Resource == "ciliumnodes" && k.Write() })
	fmt.Printf("CiliumNode writes from t0 to %s after the last ADD: %.0f (%s); %d watch events on CiliumNodes\n",
		secs(settle), cn.Total(), describe(cn), watch.Events())
	fmt.Printf("API requests in that window (%s; every client, %d Pod Creates are the benchmark's):\n", secs(tC1.Sub(t0)), o.pods)
	printRequests([]string{"t0..end"}, api)
	return nil
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
