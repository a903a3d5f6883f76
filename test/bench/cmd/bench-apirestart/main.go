// Command bench-apirestart measures how fast the agents are back to work
// after the kube-apiserver was killed and started again, and what their
// reconnection costs the API server, against a real etcd + kube-apiserver
// (test/cluster):
//
//   - three herald-agent processes (test/agentproc) run with a health
//     endpoint each; one allocates (the LB IPAM Lease);
//   - every cycle, the kube-apiserver is killed with SIGKILL, kept down for
//     -down, and started again with an audit log (test/cluster);
//   - as soon as its /readyz answers, a LoadBalancer Service is created;
//     the command polls the Service and every agent's /healthz.
//
// Per cycle it prints: API server ready -> every agent's /healthz OK,
// ready -> the new Service has an address, and the requests the agents sent
// to the restarted API server (its audit log: user agent herald-agent,
// counted when received) in the first -window after it started listening:
// how many, the most in one second, and when the first and the last came,
// relative to ready.
//
// -baseline REF builds the agent of git revision REF too (git archive into
// a temporary directory) and runs the same cycles with it first, in the
// same run, on the same API server.
//
//	go build -o _output/bin/bench-apirestart ./test/bench/cmd/bench-apirestart
//	_output/bin/bench-apirestart -cycles 5 -down 20s -baseline main
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
)

type options struct {
	cycles   int
	down     time.Duration
	window   time.Duration
	baseline string
	port     int
	keep     bool
}

func main() {
	var o options
	flag.IntVar(&o.cycles, "cycles", 5, "kill/restart cycles per agent build")
	flag.DurationVar(&o.down, "down", 20*time.Second, "how long the kube-apiserver stays down each cycle")
	flag.DurationVar(&o.window, "window", 40*time.Second, "how long after the restart the agents' requests are counted")
	flag.StringVar(&o.baseline, "baseline", "", "git revision whose agent runs the same cycles first (e.g. main)")
	flag.IntVar(&o.port, "health-port", 19965, "first of three loopback ports for the agents' /healthz")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (agent logs, audit logs) and print its path")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-apirestart:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-apirestart: %s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// build is one agent build under test.
type build struct {
	name          string
	agent, dbgBin string
}

func run(ctx context.Context, o options) error {
	root := cluster.RepoRoot()
	if root == "" {
		return errors.New("run me from inside the repository")
	}
	work, err := os.MkdirTemp("", "herald-bench-apirestart-")
	if err != nil {
		return err
	}
	if o.keep {
		defer logf("kept %s", work)
	} else {
		defer os.RemoveAll(work)
	}
	var builds []build
	if o.baseline != "" {
		src, err := checkout(root, o.baseline, filepath.Join(work, "baseline-src"))
		if err != nil {
			return err
		}
		a, d, err := agentproc.Build(src, filepath.Join(work, "baseline-bin"))
		if err != nil {
			return err
		}
		builds = append(builds, build{name: o.baseline, agent: a, dbgBin: d})
	}
	a, d, err := agentproc.Build(root, filepath.Join(work, "bin"))
	if err != nil {
		return err
	}
	builds = append(builds, build{name: "this tree", agent: a, dbgBin: d})

	b, err := newBench(ctx, work, o)
	if err != nil {
		return err
	}
	defer b.close()
	load := loadavg()
	var all [][]cycle
	for _, bd := range builds {
		cs, err := b.runBuild(ctx, bd)
		if err != nil {
			return fmt.Errorf("%s: %w", bd.name, err)
		}
		all = append(all, cs)
	}
	fmt.Printf("bench-apirestart: kube-apiserver killed, %s down, started again; %d cycles per build; 3 agents; load average %s at start, %s at end\n",
		o.down, o.cycles, load, loadavg())
	for i, bd := range builds {
		printCycles(bd.name, all[i], o.window)
	}
	return nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	var l1, l5, l15 string
	fmt.Sscan(string(b), &l1, &l5, &l15)
	return l1 + " " + l5 + " " + l15
}
