package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	current "github.com/containernetworking/cni/pkg/types/100"

	corev1 "k8s.io/api/core/v1"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/cnitest"
)

// hostLocalSubnet is host-local's range: in 198.18.0.0/15, off the LAN
// and off the pools.
const hostLocalSubnet = "198.18.128.0/21"

// chainVariant is one IPAM plugin behind the bridge plugin.
type chainVariant struct {
	name string
	rt   *cnitest.Runtime
	pods []cnitest.Pod // one per slot of a block
	// sock is the agent's socket (herald-ipam only): the plugin's
	// requests are also sent there directly, without the plugin.
	sock *sockClient
	// lat are the latencies of each operation, by operation.
	lat map[string][]time.Duration
	// took, cpu and api add up the blocks: their time, the CPU time of
	// the processes of the run, the API requests other than Leases.
	took time.Duration
	cpu  cpuUse
	api  float64
}

// The operations of a block, in the order they run.
const (
	opChainAdd = "bridge + IPAM ADD"
	opChainDel = "bridge + IPAM DEL"
	opIPAMAdd  = "IPAM ADD alone, exec'd as bridge does"
	opIPAMDel  = "IPAM DEL alone"
	opSockAdd  = "agent alone: the plugin's ADD request on its socket"
	opSockDel  = "agent alone: DEL request"
)

var chainOps = []string{opChainAdd, opChainDel, opIPAMAdd, opIPAMDel, opSockAdd, opSockDel}

// benchChain is part chain: the same network (the bridge plugin and its
// IPAM plugin, through libcni as a runtime runs it) with host-local and
// with herald-ipam, in one run on one machine, in interleaved blocks.
func benchChain(ctx context.Context, o options) error {
	fmt.Printf("\n== chain: bridge + host-local against bridge + herald-ipam, %d sequential ADDs and DELs of each, interleaved in blocks of %d\n", o.chainAdds, o.chainBlock)
	if o.chainBlock <= 0 || o.chainAdds%o.chainBlock != 0 {
		return fmt.Errorf("-chain-adds %d is not a multiple of -chain-block %d", o.chainAdds, o.chainBlock)
	}
	hosts := []string{"node1"}
	if o.baselineRef != "" {
		hosts = append(hosts, "node2")
	}
	l, err := newLab(ctx, hosts...)
	if err != nil {
		return err
	}
	defer l.close()
	vs, err := l.chainVariants(ctx, o)
	if err != nil {
		return err
	}
	// One namespace per slot of a block, shared by the variants: a block
	// ends with every attachment deleted.
	netns, err := createNetns(o.chainBlock, 0)
	if err != nil {
		return err
	}
	for _, v := range vs {
		for i := range v.pods {
			v.pods[i].Netns = netns[i].Path()
		}
	}

	// Warm-up, not counted: the bridges, the page cache, the agents'
	// first writes.
	for _, v := range vs {
		if err := v.block(ctx, "warm", min(10, o.chainBlock)); err != nil {
			return fmt.Errorf("warm-up: %w\n%s", err, l.agentLogs())
		}
		clear(v.lat)
	}
	time.Sleep(settle)

	rounds := o.chainAdds / o.chainBlock
	start := time.Now()
	for r := range rounds {
		// Each round starts with another variant: none always follows the
		// same one.
		for k := range vs {
			v := vs[(r+k)%len(vs)]
			cpu0, api0, t0 := l.cpu(), l.requestCounts(ctx), time.Now()
			if err := v.block(ctx, fmt.Sprintf("r%02d", r), o.chainBlock); err != nil {
				return fmt.Errorf("round %d: %w\n%s", r, err, l.agentLogs())
			}
			v.took += time.Since(t0)
			v.cpu = v.cpu.plus(l.cpu().since(cpu0))
			v.api += l.requestCounts(ctx).Sub(api0).Filter(func(k cluster.RequestKey) bool { return !isLease(k) }).Total()
		}
		logf("round %d of %d done", r+1, rounds)
	}
	logf("%d rounds in %s", rounds, secs(time.Since(start)))

	fmt.Println("\nCPU time and API requests (other than Leases) during each plugin's blocks, every op of the table below:")
	for _, v := range vs {
		fmt.Printf("  %-20s %s in %s; %.0f API requests\n", v.name, v.cpu.describe(v.took), secs(v.took), v.api)
	}
	for _, op := range chainOps {
		fmt.Println()
		printLatencyHeader(op + ", ms")
		for _, v := range vs {
			printLatency(v.name, v.lat[op], ms)
		}
		for _, v := range vs[1:] {
			printRatio(v.name+" / "+vs[0].name, v.lat[op], vs[0].lat[op])
		}
	}
	return nil
}

// chainVariants starts the nodes and returns host-local first, then
// herald-ipam of this tree, then (with -baseline-ref) the baseline's
// herald-ipam with its own agent on node2.
func (l *lab) chainVariants(ctx context.Context, o options) ([]*chainVariant, error) {
	if err := l.createPool(ctx, o.addMask); err != nil {
		return nil, err
	}
	hl, err := l.hostLocalRuntime("node1")
	if err != nil {
		return nil, err
	}
	vs := []*chainVariant{{name: "host-local", rt: hl}}
	type start struct {
		node, variant, pods string
		bins                binaries
	}
	starts := []start{{"node1", "herald-ipam", "c", binaries{l.agentBin, l.dbgBin, l.ipamBin}}}
	if o.baselineRef != "" {
		bins, err := buildBaseline(o.baselineRef, filepath.Join(l.work, "baseline"))
		if err != nil {
			return nil, err
		}
		starts = append(starts, start{"node2", "herald-ipam " + o.baselineRef, "d", bins})
	}
	for _, s := range starts {
		n, err := l.startNodeWith(s.node, s.bins, strings.Fields(o.agentArgs)...)
		if err != nil {
			return nil, err
		}
		v := &chainVariant{name: s.variant, rt: n.rt, sock: socketClient(n.socket)}
		if v.pods, err = l.chainPods(ctx, n, s.pods, o.chainBlock); err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	// host-local takes no Pod from the API server; it gets node1's.
	vs[0].pods = vs[1].pods
	for _, v := range vs {
		v.lat = map[string][]time.Duration{}
	}
	return vs, nil
}

// hostLocalRuntime is a bridge network on the node whose IPAM is
// host-local, configured as a user would for the same pods: the bridge
// holds the gateway, a default route through it, the data under the
// benchmark's work directory.
func (l *lab) hostLocalRuntime(host string) (*cnitest.Runtime, error) {
	dir := filepath.Join(l.work, host+"-host-local")
	if err := os.MkdirAll(filepath.Join(dir, "cni-cache"), 0o755); err != nil {
		return nil, err
	}
	conf, err := cnitest.BridgeNetwork{Name: "hl", Bridge: "hl0", IsGateway: true, IPAM: map[string]any{
		"type":    "host-local",
		"ranges":  [][]map[string]string{{{"subnet": hostLocalSubnet}}},
		"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
		"dataDir": filepath.Join(dir, "data"),
	}}.Conflist()
	if err != nil {
		return nil, err
	}
	return cnitest.NewRuntime(cnitest.RuntimeOptions{
		Conflist: conf, NodeNetns: filepath.Join(cnitest.NetnsDir, l.lan.Host(host).Netns),
		PluginDirs: []string{cnitest.PluginsDir()}, CacheDir: filepath.Join(dir, "cni-cache"),
	})
}

// chainPods waits for the node's CIDR and STATUS, creates count Pods on it
// named <prefix>-NNN and waits until its agent has them.
func (l *lab) chainPods(ctx context.Context, n *node, prefix string, count int) ([]cnitest.Pod, error) {
	if err := l.waitFor(ctx, 2*time.Minute, 100*time.Millisecond, func() (bool, string) {
		if len(nodeCIDRs(ctx, l, n.name)) == 0 {
			return false, n.name + " has no CIDR of the default pool"
		}
		if err := n.rt.Status(ctx); err != nil {
			return false, fmt.Sprintf("STATUS on %s: %v", n.name, err)
		}
		return true, ""
	}); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, l.agentLogs())
	}
	pods := make([]cnitest.Pod, count)
	if err := l.createPods(ctx, count, 10, func(i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }, func(int) string { return n.name },
		func(i int, p *corev1.Pod) {
			pods[i] = cnitest.Pod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}
		}); err != nil {
		return nil, err
	}
	return pods, l.waitFor(ctx, 2*time.Minute, 200*time.Millisecond, func() (bool, string) {
		rows, err := agentproc.Table[*tables.Pod](n.agent, tables.PodsTableName)
		if err != nil {
			return false, err.Error()
		}
		return len(rows) >= count, fmt.Sprintf("%s's pods table has %d of %d Pods", n.name, len(rows), count)
	})
}

// block runs size ADDs of the whole network, their DELs, then size ADDs
// of the IPAM plugin alone and their DELs, one at a time, each timed. An
// address given twice within a block ends the run.
func (v *chainVariant) block(ctx context.Context, tag string, size int) error {
	pods := make([]cnitest.Pod, size)
	for i := range pods {
		pods[i] = v.pods[i]
		pods[i].ContainerID = fmt.Sprintf("%s-%s-%03d", strings.Fields(v.name)[0], tag, i)
	}
	type adder func(context.Context, cnitest.Pod) (netip.Addr, error)
	chainAdd := func(ctx context.Context, p cnitest.Pod) (netip.Addr, error) {
		return firstAddr(v.rt.AddNetwork(ctx, p))
	}
	ipamAdd := func(ctx context.Context, p cnitest.Pod) (netip.Addr, error) {
		return firstAddr(v.rt.DelegateAdd(ctx, p))
	}
	type series struct {
		add          adder
		del          func(context.Context, cnitest.Pod) error
		addOp, delOp string
	}
	all := []series{{chainAdd, v.rt.DelNetwork, opChainAdd, opChainDel}, {ipamAdd, v.rt.DelegateDel, opIPAMAdd, opIPAMDel}}
	if v.sock != nil {
		all = append(all, series{v.sockAdd, v.sockDel, opSockAdd, opSockDel})
	}
	for _, s := range all {
		seen := map[netip.Addr]string{}
		for _, p := range pods {
			t := time.Now()
			a, err := s.add(ctx, p)
			v.lat[s.addOp] = append(v.lat[s.addOp], time.Since(t))
			if err != nil {
				return fmt.Errorf("%s, %s of %s: %w", v.name, s.addOp, p.ContainerID, err)
			}
			if other, dup := seen[a]; dup {
				return fmt.Errorf("%s, %s of %s: %s is %s's too", v.name, s.addOp, p.ContainerID, a, other)
			}
			seen[a] = p.ContainerID
		}
		for _, p := range pods {
			t := time.Now()
			err := s.del(ctx, p)
			v.lat[s.delOp] = append(v.lat[s.delOp], time.Since(t))
			if err != nil {
				return fmt.Errorf("%s, %s of %s: %w", v.name, s.delOp, p.ContainerID, err)
			}
		}
	}
	return nil
}

// firstAddr is the first address of an ADD's result.
func firstAddr(res *current.Result, err error) (netip.Addr, error) {
	if err != nil {
		return netip.Addr{}, err
	}
	if len(res.IPs) == 0 {
		return netip.Addr{}, fmt.Errorf("no address in the result")
	}
	a, ok := netip.AddrFromSlice(res.IPs[0].Address.IP)
	if !ok {
		return netip.Addr{}, fmt.Errorf("address %v", res.IPs[0].Address)
	}
	return a.Unmap(), nil
}

// printRatio prints the percentiles of a over those of b.
func printRatio(name string, a, b []time.Duration) {
	if len(a) == 0 || len(b) == 0 {
		return
	}
	sa, sb := slices.Clone(a), slices.Clone(b)
	slices.Sort(sa)
	slices.Sort(sb)
	r := func(p float64) string {
		return fmt.Sprintf("%.2fx", float64(quantile(sa, p))/float64(quantile(sb, p)))
	}
	fmt.Printf(latencyHeader, name, "", r(0.50), r(0.90), r(0.99), fmt.Sprintf("%.2fx", float64(sa[len(sa)-1])/float64(sb[len(sb)-1])), "")
}

// buildBaseline builds herald-agent, herald-dbg and herald-ipam of a git
// revision of this repository (e.g. main) into dir, as the Makefile does:
// the tree of the revision is extracted there first.
func buildBaseline(ref, dir string) (binaries, error) {
	root := cluster.RepoRoot()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return binaries{}, err
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, ref, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return binaries{}, fmt.Errorf("extracting %s: %w\n%s", ref, err, out)
	}
	b := binaries{agent: filepath.Join(dir, "bin", "herald-agent"), dbg: filepath.Join(dir, "bin", "herald-dbg"), ipam: filepath.Join(dir, "cni-bin", "herald-ipam")}
	for _, t := range []struct{ out, pkg, cgo string }{{b.agent, "./cmd/herald-agent", "1"}, {b.dbg, "./cmd/herald-dbg", "1"}, {b.ipam, "./cmd/herald-ipam", "0"}} {
		cmd := exec.Command("go", "build", "-o", t.out, t.pkg)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+t.cgo)
		if out, err := cmd.CombinedOutput(); err != nil {
			return binaries{}, fmt.Errorf("%s: go build %s: %w\n%s", ref, t.pkg, err, out)
		}
	}
	logf("built the baseline %s", ref)
	return b, nil
}

// sockAdd sends the ADD request herald-ipam would send to the agent.
func (v *chainVariant) sockAdd(ctx context.Context, p cnitest.Pod) (netip.Addr, error) {
	var resp ipamv1.AddResponse
	if err := v.sock.call(ctx, ipamv1.PathAdd, ipamv1.AddRequest{
		Attachment: ipamv1.Attachment{ContainerID: p.ContainerID, IfName: "eth0"}, Netns: p.Netns,
		Network: v.rt.Network(), Bridge: "cni0", Pod: ipamv1.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
	}, &resp); err != nil {
		return netip.Addr{}, err
	}
	if len(resp.IPs) != 1 {
		return netip.Addr{}, fmt.Errorf("%d addresses", len(resp.IPs))
	}
	return netip.MustParsePrefix(resp.IPs[0].Address).Addr(), nil
}

// sockDel sends herald-ipam's DEL request to the agent.
func (v *chainVariant) sockDel(ctx context.Context, p cnitest.Pod) error {
	return v.sock.call(ctx, ipamv1.PathDel, ipamv1.DelRequest{
		Attachment: ipamv1.Attachment{ContainerID: p.ContainerID, IfName: "eth0"},
		Pod:        ipamv1.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
	}, nil)
}

// requestCounts reads the API server's request counters; zero counts if it
// cannot (the figures then say so by being zero).
func (l *lab) requestCounts(ctx context.Context) cluster.RequestCounts {
	c, err := l.c.RequestCounts(ctx)
	if err != nil {
		logf("%v", err)
	}
	return c
}
