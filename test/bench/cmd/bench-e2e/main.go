// Command bench-e2e measures how fast LoadBalancer Services get their IPs,
// end to end, against a real etcd + kube-apiserver (test/cluster), for
// several contenders side by side:
//
//   - alone: no controller; the figure is the wall time until every Create
//     call returned (what the API server alone needs);
//   - null: test/bench/cmd/bench-null, the floor for anything that
//     publishes IPs in Service status (one protobuf status update per
//     Service, nothing else);
//   - herald: herald-agent (-agent, repeatable as LABEL=PATH to compare
//     builds);
//   - metallb: MetalLB's controller, when -metallb names its binary
//     (hack/metallb.sh builds it from the Go module proxy).
//
// Every measurement starts a fresh cluster, starts the contender, waits
// until a canary Service got an IP (the contender is ready), creates N
// LoadBalancer Services with W concurrent clients, and stops the clock when
// a Service watch has seen an ingress IP on every one. Rounds interleave the
// contenders (alone, null, herald, metallb, alone, null, ...) so that a
// machine that gets busier hurts all of them alike; the summary gives
// medians and Herald's time over the null controller's per round.
//
// Also per measurement: the contender's CPU time (utime+stime from /proc,
// from the first Create until its status writes settled) per Service, its
// VmRSS and VmHWM, the kube-apiserver's and etcd's CPU time over the same
// window, how many Service MODIFIED events the watch saw per Service and
// how many Events the namespace holds.
//
// Run it from inside the repository (make bench-alloc does):
//
//	go build -o _output/bin/bench-e2e ./test/bench/cmd/bench-e2e
//	_output/bin/bench-e2e -services 1000 -workers 16 -rounds 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/cluster"
)

type options struct {
	services    int
	workers     int
	rounds      int
	only        string
	agents      agentFlags
	agentArgs   string
	null        string
	metallb     string
	metallbCRDs string
	metallbArgs string
	poolCIDR    string
	timeout     time.Duration
	profileDir  string
	cpuProfile  time.Duration
	pool        netip.Prefix
}

func main() {
	var o options
	flag.IntVar(&o.services, "services", 1000, "LoadBalancer Services to create in each measurement")
	flag.IntVar(&o.workers, "workers", 16, "concurrent Create calls")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each measures every contender once, in turn")
	flag.StringVar(&o.only, "contenders", "", "comma-separated subset of alone,null,herald,metallb (default: all that are configured)")
	flag.Var(&o.agents, "agent", "herald-agent binary, as PATH or LABEL=PATH; repeat to compare builds (default _output/bin/herald-agent)")
	flag.StringVar(&o.agentArgs, "agent-args", "", "extra herald-agent flags, space separated (e.g. \"--k8s-client-qps=500\")")
	flag.StringVar(&o.null, "null", "_output/bin/bench-null", "the null controller's binary")
	flag.StringVar(&o.metallb, "metallb", "", "MetalLB controller binary (hack/metallb.sh prints its path); empty leaves MetalLB out")
	flag.StringVar(&o.metallbCRDs, "metallb-crds", "", "directory of MetalLB's CRDs (config/crd/bases of the same version)")
	flag.StringVar(&o.metallbArgs, "metallb-args", "", "extra MetalLB controller flags, space separated")
	flag.StringVar(&o.poolCIDR, "pool-cidr", "198.18.0.0/16", "the one block of every contender's address pool")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Minute, "give up after this long")
	flag.StringVar(&o.profileDir, "profile-dir", "", "keep each contender's /proc/PID/smaps (when ready and at the end) and herald-agent's heap profile (run with --pprof) in this directory")
	flag.DurationVar(&o.cpuProfile, "cpu-profile", 10*time.Second, "with -profile-dir: how long herald-agent's CPU profile runs, from the first Create")
	flag.Parse()
	if o.services < 1 || o.workers < 1 || o.rounds < 1 {
		fatalf("-services, -workers and -rounds must be at least 1")
	}
	var err error
	if o.pool, err = netip.ParsePrefix(o.poolCIDR); err != nil {
		fatalf("-pool-cidr: %v", err)
	}
	if o.pool.Addr().Is4() && o.pool.Bits() > 32-bitsFor(o.services+1) {
		fatalf("-pool-cidr %s is too small for %d Services", o.pool, o.services)
	}
	contenders, err := o.contenders()
	if err != nil {
		fatalf("%v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	var results []measurement
	for r := 1; r <= o.rounds; r++ {
		for _, c := range contenders {
			logf("round %d of %d: %s", r, o.rounds, c.label)
			m, err := measure(ctx, o, c, r)
			if err != nil {
				fatalf("round %d, %s: %v", r, c.label, err)
			}
			results = append(results, m)
			printMeasurement(o, m)
		}
	}
	printSummary(o, contenders, results)
}

// agentFlags collects the repeated -agent flag.
type agentFlags []string

func (a *agentFlags) String() string     { return strings.Join(*a, ",") }
func (a *agentFlags) Set(v string) error { *a = append(*a, v); return nil }

// contenders resolves the flags into the contenders of one round, in the
// order they run.
func (o options) contenders() ([]contender, error) {
	root := cluster.RepoRoot()
	if root == "" {
		return nil, errors.New("run me from inside the repository (cannot find its go.mod)")
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	want := map[string]bool{"alone": true, "null": true, "herald": true, "metallb": o.metallb != ""}
	if o.only != "" {
		want = map[string]bool{}
		for _, k := range strings.Split(o.only, ",") {
			want[strings.TrimSpace(k)] = true
		}
	}
	var cs []contender
	if want["alone"] {
		cs = append(cs, contender{kind: kindAlone, label: "apiserver alone"})
	}
	if want["null"] {
		cs = append(cs, contender{kind: kindNull, label: "null controller", bin: abs(o.null)})
	}
	if want["herald"] {
		agents := o.agents
		if len(agents) == 0 {
			agents = agentFlags{"_output/bin/herald-agent"}
		}
		for _, a := range agents {
			label, path := "herald", a
			if l, p, ok := strings.Cut(a, "="); ok {
				label, path = "herald "+l, p
			}
			cs = append(cs, contender{kind: kindHerald, label: label, bin: abs(path), args: strings.Fields(o.agentArgs)})
		}
	}
	if want["metallb"] {
		if o.metallb == "" || o.metallbCRDs == "" {
			return nil, errors.New("metallb: give -metallb and -metallb-crds (hack/metallb.sh)")
		}
		cs = append(cs, contender{kind: kindMetalLB, label: "metallb controller", bin: abs(o.metallb),
			crds: abs(o.metallbCRDs), args: strings.Fields(o.metallbArgs)})
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("-contenders %q selects nothing", o.only)
	}
	for _, c := range cs {
		if c.bin == "" {
			continue
		}
		if _, err := os.Stat(c.bin); err != nil {
			return nil, fmt.Errorf("%s: %w (make build builds herald-agent and bench-null)", c.label, err)
		}
	}
	return cs, nil
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
