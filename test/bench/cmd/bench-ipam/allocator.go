package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/ipamwatch"
)

// fakeDemand is what every fake node asks of the default pool.
const fakeDemand = 8

// benchAllocator is part 3: the pod CIDR allocator and 1000 CiliumNodes.
//
// The agent runs in a node namespace of the LAN, not in the host's: with
// multi-pool IPAM it turns on IP forwarding in its namespace at start
// (cells/podipam/nodeipam, enableForwarding), which on the host would change the
// host's configuration.
func benchAllocator(ctx context.Context, o options) error {
	fmt.Printf("\n== allocator: %d fake nodes (a Node and a CiliumNode asking for %d addresses of the default pool each), one agent leading %s\n",
		o.fakes, fakeDemand, tables.PodIPAMLease)
	l, err := newLab(ctx, "leader")
	if err != nil {
		return err
	}
	defer l.close()
	if err := l.createPool(ctx, o.allocMask); err != nil {
		return err
	}
	// Phase A: the fake nodes exist before the agent starts.
	t := time.Now()
	createdAt, err := createFakes(ctx, l, 0, o.fakes, o.workers)
	if err != nil {
		return err
	}
	logf("phase A: %d Nodes and CiliumNodes created in %s (before the agent starts, not timed)", o.fakes, secs(time.Since(t)))
	watch, err := ipamwatch.Start(ctx, l.herald)
	if err != nil {
		return err
	}
	time.Sleep(settle)
	names := fakeNames(0, o.fakes)

	c0, err := l.c.RequestCounts(ctx)
	if err != nil {
		return err
	}
	cpu0 := l.cpu()
	t0 := time.Now()
	n, err := l.startNode("leader", strings.Fields(o.agentArgs)...)
	if err != nil {
		return err
	}
	tAll, err := waitAllocated(ctx, l, watch, names)
	if err != nil {
		return err
	}
	cpu := l.cpu().since(cpu0)
	time.Sleep(settle)
	c1, err := l.c.RequestCounts(ctx)
	if err != nil {
		return err
	}
	marks := logTimes(n.agent.LogPath(), map[string][]string{
		"term":     {"Became leader", tables.PodIPAMLease},
		"restored": {"Restored pod CIDRs from the CiliumNodes"},
	})
	var lat []time.Duration
	for _, name := range names {
		at, _ := watch.FirstCIDRAt(name)
		lat = append(lat, at.Sub(t0))
	}
	fmt.Printf("\nphase A: the agent starts with the %d CiliumNodes already there (t0: agent started)\n", o.fakes)
	for _, k := range []string{"term", "restored"} {
		if at, ok := marks[k]; ok {
			fmt.Printf("  t0+%-9s %s\n", secs(at.Sub(t0)), map[string]string{"term": "it holds " + tables.PodIPAMLease + " (log)", "restored": "CiliumNodes restored into the engine, allocating (log)"}[k])
		}
	}
	fmt.Printf("  t0+%-9s all %d fake CiliumNodes list a CIDR (watch)\n", secs(tAll.Sub(t0)), o.fakes)
	printLatencyHeader("  per CiliumNode")
	printLatency("  t0 -> CIDR seen by a watch", lat, secs)
	fmt.Printf("  CPU time until then: %s\n", cpu.describe(tAll.Sub(t0)))
	reportWrites(c1.Sub(c0), o.fakes)

	// Phase B: 1000 more arrive while the agent leads.
	names = fakeNames(o.fakes, o.fakes)
	c2, err := l.c.RequestCounts(ctx)
	if err != nil {
		return err
	}
	cpu0 = l.cpu()
	t0 = time.Now()
	createdAt, err = createFakes(ctx, l, o.fakes, o.fakes, o.workers)
	if err != nil {
		return err
	}
	tCreated := time.Now()
	tAll, err = waitAllocated(ctx, l, watch, names)
	if err != nil {
		return err
	}
	cpu = l.cpu().since(cpu0)
	time.Sleep(settle)
	c3, err := l.c.RequestCounts(ctx)
	if err != nil {
		return err
	}
	lat = lat[:0]
	for _, name := range names {
		at, _ := watch.FirstCIDRAt(name)
		lat = append(lat, at.Sub(createdAt[name]))
	}
	fmt.Printf("\nphase B: %d more arrive while the agent leads (t0: first Node Create; %d clients create each Node, then its CiliumNode)\n", o.fakes, o.workers)
	fmt.Printf("  t0+%-9s the last CiliumNode Create returned\n", secs(tCreated.Sub(t0)))
	fmt.Printf("  t0+%-9s all %d new CiliumNodes list a CIDR (watch)\n", secs(tAll.Sub(t0)), o.fakes)
	printLatencyHeader("  per CiliumNode")
	printLatency("  its Create returned -> CIDR seen by a watch", lat, ms)
	fmt.Printf("  CPU time until then: %s\n", cpu.describe(tAll.Sub(t0)))
	reportWrites(c3.Sub(c2), o.fakes)
	fmt.Printf("  (the %d Node and %d CiliumNode Creates, and the Node status updates, are the benchmark's)\n", o.fakes, o.fakes)

	if vs := watch.Violations(); len(vs) > 0 {
		return fmt.Errorf("CIDRs on two nodes:\n%s", strings.Join(vs[:min(len(vs), 10)], "\n"))
	}
	fmt.Printf("  %s\n", strings.SplitN(watch.Summary(), ";", 2)[0]+"; 0 CIDRs on two nodes")
	return nil
}

// reportWrites prints the API requests of a phase and the allocator's
// writes per fake node.
func reportWrites(api cluster.RequestCounts, nodes int) {
	cn := api.Filter(func(k cluster.RequestKey) bool {
		return k.Resource == "ciliumnodes" && k.Write() && k.Verb != "CREATE" && k.Verb != "POST"
	})
	ev := api.Filter(func(k cluster.RequestKey) bool { return k.Resource == "events" && k.Write() })
	fmt.Printf("  CiliumNode writes other than Creates: %.0f = %.2f per node (%s); Events: %.0f\n", cn.Total(), cn.Total()/float64(nodes), describe(cn), ev.Total())
	fmt.Println("  API requests in the phase (until 3 s after the last CIDR; every client):")
	printRequests([]string{"count"}, api)
}

func fakeNames(from, count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf("fake-%04d", from+i)
	}
	return out
}

// createFakes creates count fake nodes fake-<from..>: a Node (with an
// InternalIP, as a kubelet registers it), then a CiliumNode asking for
// fakeDemand addresses of the default pool, as an agent creates it. It
// returns when each CiliumNode Create returned.
func createFakes(ctx context.Context, l *lab, from, count, workers int) (map[string]time.Time, error) {
	var (
		mu       sync.Mutex
		out      = map[string]time.Time{}
		firstErr error
		wg       sync.WaitGroup
	)
	idx := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				name := fmt.Sprintf("fake-%04d", i)
				err := l.createNode(ctx, name, fmt.Sprintf("198.18.%d.%d", 16+i/250, 1+i%250))
				if err == nil {
					cn := &v2.CiliumNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
					cn.Spec.IPAM.Pools.Requested = []v2.IPAMPoolRequest{{Pool: tables.DefaultPodIPPool, Needed: v2.IPAMPoolDemand{IPv4Addrs: fakeDemand}}}
					_, err = l.herald.CiliumV2().CiliumNodes().Create(ctx, cn, metav1.CreateOptions{})
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("fake node %s: %w", name, err)
				}
				out[name] = time.Now()
				mu.Unlock()
			}
		}()
	}
	for i := from; i < from+count; i++ {
		idx <- i
	}
	close(idx)
	wg.Wait()
	return out, firstErr
}

// waitAllocated waits until every named CiliumNode listed a CIDR, as the
// watch saw it, and returns when the last one did.
func waitAllocated(ctx context.Context, l *lab, w *ipamwatch.Watcher, names []string) (time.Time, error) {
	var last time.Time
	err := l.waitFor(ctx, 5*time.Minute, 20*time.Millisecond, func() (bool, string) {
		missing := 0
		last = time.Time{}
		for _, name := range names {
			at, ok := w.FirstCIDRAt(name)
			if !ok {
				missing++
			} else if at.After(last) {
				last = at
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d CiliumNodes have no CIDR", missing, len(names))
	})
	if err != nil {
		err = fmt.Errorf("%w\n%s", err, l.agentLogs())
	}
	return last, err
}

// logTimes returns, for each key, when the first line containing all its
// strings appeared in an agent's log (the line's time= field).
func logTimes(path string, msgs map[string][]string) map[string]time.Time {
	out := map[string]time.Time{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		for k, parts := range msgs {
			if _, done := out[k]; done || !containsAll(line, parts) {
				continue
			}
			if v, ok := strings.CutPrefix(line, "time="); ok {
				ts, _, _ := strings.Cut(v, " ")
				if at, err := time.Parse(time.RFC3339Nano, ts); err == nil {
					out[k] = at
				}
			}
		}
	}
	return out
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
