package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/cnitest"
)

// idleWindow is how long the API server's counters are read with the
// agent idle, to tell the elections' steady Lease traffic from what ADDs
// cause.
const idleWindow = 10 * time.Second

// settle is how long after a series the counters are read again: the
// agent writes the addresses in use at most every 2 s.
const settle = 3 * time.Second

// benchAdd is part 1: ADD latency on a node whose CIDR is there.
func benchAdd(ctx context.Context, o options) error {
	fmt.Printf("\n== add: ADD latency on one node whose CIDR of the default pool is already there (%d sequential ADDs of each kind)\n", o.adds)
	l, err := newLab(ctx, "node1")
	if err != nil {
		return err
	}
	defer l.close()
	b, err := startAddNode(ctx, l, o)
	if err != nil {
		return err
	}
	if err := b.warmUp(); err != nil {
		return err
	}
	// Idle: the elections' Lease renewals and the API server's own.
	c0 := b.counts()
	time.Sleep(idleWindow)
	idle := b.counts().Sub(c0)
	if err := b.runAll(); err != nil {
		return err
	}
	b.report(o, idle)
	return nil
}

// addBench is the add part's world: one node whose CIDR is there, its
// Pods, and the series run so far.
type addBench struct {
	ctx   context.Context
	l     *lab
	n     *node
	pods  []cnitest.Pod
	cidrs []string // node1's at the start
	all   []*series
	seen  map[netip.Addr]string // the addresses given out, until released
}

// series is one kind of operation run for every Pod, one at a time.
type series struct {
	name string
	lat  []time.Duration
	took time.Duration
	api  cluster.RequestCounts // during the series
	post cluster.RequestCounts // the settle time after it
	cpu  cpuUse
}

// startAddNode creates the pool, starts node1's agent and waits for its
// CIDR and STATUS, then creates the Pods and waits until the agent has
// them in its pods table.
func startAddNode(ctx context.Context, l *lab, o options) (*addBench, error) {
	if err := l.createPool(ctx, o.addMask); err != nil {
		return nil, err
	}
	n, err := l.startNode("node1", strings.Fields(o.agentArgs)...)
	if err != nil {
		return nil, err
	}
	b := &addBench{ctx: ctx, l: l, n: n, pods: make([]cnitest.Pod, o.adds), seen: map[netip.Addr]string{}}
	if err := l.waitFor(ctx, 2*time.Minute, 100*time.Millisecond, func() (bool, string) {
		b.cidrs = nodeCIDRs(ctx, l, "node1")
		if len(b.cidrs) == 0 {
			return false, "node1 has no CIDR of the default pool"
		}
		if err := n.rt.Status(ctx); err != nil {
			return false, fmt.Sprintf("STATUS: %v", err)
		}
		return true, ""
	}); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, l.agentLogs())
	}
	logf("node1 holds %v", b.cidrs)

	if err := l.createPods(ctx, o.adds, 20, func(i int) string { return fmt.Sprintf("p-%04d", i) }, func(int) string { return "node1" },
		func(i int, p *corev1.Pod) {
			b.pods[i] = cnitest.Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID),
				Netns: filepath.Join(cnitest.NetnsDir, fmt.Sprintf("%s%d", podPrefix, i))}
		}); err != nil {
		return nil, err
	}
	if err := l.waitFor(ctx, 2*time.Minute, 500*time.Millisecond, func() (bool, string) {
		rows, err := agentproc.Table[*tables.Pod](n.agent, tables.PodsTableName)
		if err != nil {
			return false, err.Error()
		}
		return len(rows) >= o.adds, fmt.Sprintf("the agent's pods table has %d of %d Pods", len(rows), o.adds)
	}); err != nil {
		return nil, err
	}
	logf("%d Pods created and in the agent's pods table", o.adds)
	return b, nil
}

// warmUp: one full ADD creates the bridge (the agent puts the gateway on
// it in every ADD), a few plugin runs fill the page cache.
func (b *addBench) warmUp() error {
	warm, err := cnitest.NewNetns(podPrefix + "warm")
	if err != nil {
		return err
	}
	wp := b.pods[0]
	wp.ContainerID, wp.Netns = "warm-full", warm.Path()
	if _, err := b.n.rt.Add(b.ctx, wp); err != nil {
		return fmt.Errorf("warm-up ADD: %w\n%s", err, b.l.agentLogs())
	}
	if err := b.n.rt.Del(b.ctx, wp); err != nil {
		return fmt.Errorf("warm-up DEL: %w", err)
	}
	for i := range 5 {
		p := b.pods[i]
		p.ContainerID = fmt.Sprintf("warm-%d", i)
		if _, err := b.n.rt.DelegateAdd(b.ctx, p); err != nil {
			return fmt.Errorf("warm-up ADD: %w", err)
		}
		if err := b.n.rt.DelegateDel(b.ctx, p); err != nil {
			return fmt.Errorf("warm-up DEL: %w", err)
		}
	}
	time.Sleep(settle) // the agent's writes after the warm-up
	return nil
}

func (b *addBench) counts() cluster.RequestCounts {
	c, err := b.l.c.RequestCounts(b.ctx)
	if err != nil {
		logf("%v", err)
	}
	return c
}

// runAll runs the series: the agent alone on its socket, the plugin's
// process start, herald-ipam exec'd alone as bridge execs it, and the
// whole ADD through libcni.
func (b *addBench) runAll() error {
	ctx, n := b.ctx, b.n
	// (c) the agent alone: the plugin's request on the socket, no exec.
	sock := socketClient(n.socket)
	if err := b.run("agent alone: ADD request on its socket", func(p cnitest.Pod) (*ipamv1.AddResponse, error) {
		var resp ipamv1.AddResponse
		err := sock.call(ctx, ipamv1.PathAdd, ipamv1.AddRequest{
			Attachment: ipamv1.Attachment{ContainerID: p.ContainerID, IfName: "eth0"}, Netns: p.Netns,
			Network: n.rt.Network(), Bridge: "cni0", Pod: ipamv1.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		}, &resp)
		return &resp, err
	}, "s", true); err != nil {
		return err
	}
	if err := b.run("agent alone: DEL request on its socket", func(p cnitest.Pod) (*ipamv1.AddResponse, error) {
		return nil, sock.call(ctx, ipamv1.PathDel, ipamv1.DelRequest{
			Attachment: ipamv1.Attachment{ContainerID: p.ContainerID, IfName: "eth0"},
			Pod:        ipamv1.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		}, nil)
	}, "s", false); err != nil {
		return err
	}
	clear(b.seen)

	// What starting the plugin costs: VERSION asks nothing of the agent.
	if err := b.run("herald-ipam VERSION, exec'd (process start only)", func(cnitest.Pod) (*ipamv1.AddResponse, error) {
		cmd := exec.CommandContext(ctx, b.l.ipamBin)
		cmd.Env = append(os.Environ(), "CNI_COMMAND=VERSION")
		cmd.Stdin = strings.NewReader(`{"cniVersion":"1.1.0"}`)
		_, err := cmd.Output()
		return nil, err
	}, "v", false); err != nil {
		return err
	}

	// (a) herald-ipam alone, exec'd as bridge execs it.
	if err := b.run("herald-ipam ADD, exec'd alone as bridge does", func(p cnitest.Pod) (*ipamv1.AddResponse, error) {
		res, err := n.rt.DelegateAdd(ctx, p)
		if err != nil {
			return nil, err
		}
		return fromResult(res.IPs[0].Address.String()), nil
	}, "a", true); err != nil {
		return err
	}
	if err := b.run("herald-ipam DEL, exec'd alone", func(p cnitest.Pod) (*ipamv1.AddResponse, error) {
		return nil, n.rt.DelegateDel(ctx, p)
	}, "a", false); err != nil {
		return err
	}
	clear(b.seen)

	// (b) the whole ADD through libcni: loopback, then bridge, which execs
	// herald-ipam. Each Pod needs its network namespace (made first, not
	// timed: the runtime's work).
	t := time.Now()
	if _, err := createNetns(len(b.pods), 0); err != nil {
		return err
	}
	logf("%d pod namespaces created in %s", len(b.pods), secs(time.Since(t)))
	time.Sleep(settle)
	return b.run("loopback + bridge + herald-ipam ADD via libcni", func(p cnitest.Pod) (*ipamv1.AddResponse, error) {
		res, err := n.rt.Add(ctx, p)
		if err != nil {
			return nil, err
		}
		return fromResult(res.IPs[0].Address.String()), nil
	}, "b", true)
}

// run runs op for every Pod, one at a time, as containers named after
// container; with checkAddrs, every address must be new.
func (b *addBench) run(name string, op func(p cnitest.Pod) (*ipamv1.AddResponse, error), container string, checkAddrs bool) error {
	s := &series{name: name}
	before := b.counts()
	cpu0 := b.l.cpu()
	start := time.Now()
	for i, p := range b.pods {
		p.ContainerID = fmt.Sprintf("%s-%04d", container, i)
		t := time.Now()
		resp, err := op(p)
		s.lat = append(s.lat, time.Since(t))
		if err != nil {
			return fmt.Errorf("%s, pod %s: %w\n%s", name, p.Name, err, b.l.agentLogs())
		}
		if checkAddrs {
			if len(resp.IPs) != 1 {
				return fmt.Errorf("%s, pod %s: %d addresses", name, p.Name, len(resp.IPs))
			}
			a := netip.MustParsePrefix(resp.IPs[0].Address).Addr()
			if other, dup := b.seen[a]; dup {
				return fmt.Errorf("%s, pod %s: %s is %s's too", name, p.Name, a, other)
			}
			b.seen[a] = p.Name
		}
	}
	s.took = time.Since(start)
	s.cpu = b.l.cpu().since(cpu0)
	after := b.counts()
	s.api = after.Sub(before)
	time.Sleep(settle)
	s.post = b.counts().Sub(after)
	b.all = append(b.all, s)
	logf("%s: %d in %s", name, len(b.pods), secs(s.took))
	return nil
}

// report prints the series' latencies, API requests and CPU, against the
// idle window.
func (b *addBench) report(o options, idle cluster.RequestCounts) {
	after := nodeCIDRs(b.ctx, b.l, "node1")
	size, managed, used := objectSize(b.ctx, b.l, "node1")
	fmt.Printf("node1's CIDRs: %v before, %v after (pool %s, /%d)\n", b.cidrs, after, poolCIDR, o.addMask)
	fmt.Printf("CiliumNode node1 at the end, as JSON: %d bytes, of which metadata.managedFields %d bytes; status.ipam.used lists %d addresses\n", size, managed, used)
	printLatencyHeader("one at a time, ms")
	for _, s := range b.all {
		printLatency(s.name, s.lat, ms)
	}
	fmt.Printf("\nAPI requests (every client; the benchmark itself sends none in these windows). %q is an idle %s with the agent holding its Leases.\n", "idle", idleWindow)
	names := []string{"idle"}
	windows := []cluster.RequestCounts{idle}
	for i, s := range b.all {
		names = append(names, fmt.Sprintf("%c:%s", 'A'+i, secs(s.took)), fmt.Sprintf("%c:+%s", 'A'+i, secs(settle)))
		windows = append(windows, s.api, s.post)
	}
	for i, s := range b.all {
		fmt.Printf("  %c = %s\n", 'A'+i, s.name)
	}
	printRequests(names, windows...)
	fmt.Println("\nCPU time during each series:")
	for i, s := range b.all {
		fmt.Printf("  %c: %s\n", 'A'+i, s.cpu.describe(s.took))
	}
	leaseRate := idle.Filter(isLease).Total() / idleWindow.Seconds()
	fmt.Printf("Lease requests (the agent's elections, the API server's own Lease): %.1f/s idle\n", leaseRate)
	for _, s := range b.all {
		other := s.api.Filter(func(k cluster.RequestKey) bool { return !isLease(k) })
		later := s.post.Filter(func(k cluster.RequestKey) bool { return !isLease(k) })
		fmt.Printf("%-52s non-Lease requests: %4.0f during (%s), %3.0f in the %s after; Lease requests %.1f/s\n",
			s.name, other.Total(), describe(other), later.Total(), secs(settle), s.api.Filter(isLease).Total()/s.took.Seconds())
	}
}

// describe lists the counts briefly: "12 PATCH ciliumnodes, 2 APPLY ...".
func describe(c cluster.RequestCounts) string {
	var parts []string
	for _, k := range c.Keys() {
		parts = append(parts, fmt.Sprintf("%.0f %s", c[k], k))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func fromResult(addr string) *ipamv1.AddResponse {
	return &ipamv1.AddResponse{IPs: []ipamv1.IPConfig{{Address: addr}}}
}

// nodeCIDRs returns the CIDRs a CiliumNode lists for the default pool.
func nodeCIDRs(ctx context.Context, l *lab, name string) []string {
	cn, err := l.herald.CiliumV2().CiliumNodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range cn.Spec.IPAM.Pools.Allocated {
		if a.Pool == tables.DefaultPodIPPool {
			for _, c := range a.CIDRs {
				out = append(out, string(c))
			}
		}
	}
	return out
}

// objectSize returns the size of a CiliumNode as the API server serves it
// in JSON, the size of its managedFields, and how many addresses its
// status.ipam.used lists.
func objectSize(ctx context.Context, l *lab, name string) (total, managed, used int) {
	raw, err := l.herald.CiliumV2().RESTClient().Get().Resource("ciliumnodes").Name(name).DoRaw(ctx)
	if err != nil {
		return 0, 0, 0
	}
	var obj struct {
		Metadata struct {
			ManagedFields json.RawMessage `json:"managedFields"`
		} `json:"metadata"`
		Status struct {
			IPAM struct {
				Used map[string]json.RawMessage `json:"used"`
			} `json:"ipam"`
		} `json:"status"`
	}
	_ = json.Unmarshal(raw, &obj)
	return len(raw), len(obj.Metadata.ManagedFields), len(obj.Status.IPAM.Used)
}
