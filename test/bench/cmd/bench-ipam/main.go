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
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/test/cluster"
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
