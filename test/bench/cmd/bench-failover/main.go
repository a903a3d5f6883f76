// Command bench-failover measures how long new Services wait for an address
// while the allocating agent keeps crashing, against a real etcd +
// kube-apiserver (test/cluster):
//
//   - three herald-agent processes (test/agentproc) campaign for the LB IPAM
//     Lease;
//   - Services are created at a steady rate for the whole run;
//   - every -kill-every, the agent holding the Lease is killed with SIGKILL
//     and started again a second later (as a kubelet restarts a container);
//   - a watch (test/lbwatch) records when each Service first shows an
//     address and checks that no address is ever on two Services and no
//     Service's address changes.
//
// It prints the distribution of create-to-address latency over all
// Services, over those created while no agent was allocating, the number of
// takeovers, and the broken promises (there must be none).
//
//	go build -o _output/bin/bench-failover ./test/bench/cmd/bench-failover
//	_output/bin/bench-failover -duration 2m -kill-every 10s -rate 10
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/lbwatch"
)

const (
	leaseNamespace = "kube-system"
	benchNamespace = "herald-bench"
	poolCIDR       = "198.19.0.0/16" // data only: nothing is announced
)

type options struct {
	duration  time.Duration
	killEvery time.Duration
	rate      float64
	agentArgs string
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 2*time.Minute, "how long Services are created and agents killed")
	flag.DurationVar(&o.killEvery, "kill-every", 10*time.Second, "kill the allocating agent this often")
	flag.Float64Var(&o.rate, "rate", 10, "Services created per second")
	flag.StringVar(&o.agentArgs, "agent-args", "", "extra herald-agent flags, space separated (e.g. \"--lb-ipam-lease-duration=15s --lb-ipam-lease-renew-deadline=10s --lb-ipam-lease-retry-period=2s\")")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-failover:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-failover: %s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

func run(ctx context.Context, o options) error {
	work, err := os.MkdirTemp("", "herald-bench-failover-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	c, agents, err := startWorld(ctx, work, o)
	if c != nil {
		defer c.Stop()
	}
	defer func() {
		for _, a := range agents {
			_ = a.Stop()
		}
	}()
	if err != nil {
		return err
	}
	w, err := lbwatch.Start(ctx, c.Client, benchNamespace)
	if err != nil {
		return err
	}
	if _, _, err := holder(ctx, c.Client, agents, ""); err != nil {
		return err
	}
	logf("3 agents run, one leads; creating %.0f Services/s for %s, killing the leader every %s", o.rate, o.duration, o.killEvery)

	runCtx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	r := &creator{created: map[string]time.Time{}}
	r.wg.Add(1)
	go r.create(runCtx, ctx, c.Client, o.rate)
	gaps, err := killLeaders(runCtx, ctx, c.Client, agents, o.killEvery)
	cancel() // the creates stop too if a kill failed
	r.wg.Wait()
	if err != nil {
		return err
	}

	// Every Service gets its address eventually.
	deadline := time.Now().Add(2 * time.Minute)
	for len(w.WithoutIPs()) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if missing := w.WithoutIPs(); len(missing) > 0 {
		return fmt.Errorf("%d Services never got an address: %v", len(missing), missing[:min(5, len(missing))])
	}
	return report(o, w, r.created, gaps)
}

// startWorld builds the agent, starts the control plane with the CRDs,
// the namespaces and the pool, and three agents. The cluster and agents
// it started come back also with an error, to be stopped.
func startWorld(ctx context.Context, work string, o options) (*cluster.Cluster, []*agentproc.Agent, error) {
	root := cluster.RepoRoot()
	if root == "" {
		return nil, nil, errors.New("run me from inside the repository")
	}
	agentBin, dbgBin, err := agentproc.Build(root, filepath.Join(work, "bin"))
	if err != nil {
		return nil, nil, err
	}
	c, err := cluster.Start(cluster.Options{})
	if err != nil {
		return nil, nil, err
	}
	if err := c.InstallCRDs(ctx, filepath.Join(root, "install", "crds")); err != nil {
		return c, nil, err
	}
	for _, ns := range []string{leaseNamespace, benchNamespace} {
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return c, nil, err
		}
	}
	herald, err := versioned.NewForConfig(c.RESTConfig)
	if err != nil {
		return c, nil, err
	}
	if _, err := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Create(ctx, &v2alpha1.CiliumLoadBalancerIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec:       v2alpha1.CiliumLoadBalancerIPPoolSpec{Blocks: []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: poolCIDR}}},
	}, metav1.CreateOptions{}); err != nil {
		return c, nil, err
	}
	var agents []*agentproc.Agent
	for i := 1; i <= 3; i++ {
		a := agentproc.New(agentproc.Options{
			Name: fmt.Sprintf("node%d", i), Dir: filepath.Join(work, fmt.Sprintf("node%d", i)),
			AgentBin: agentBin, DbgBin: dbgBin, Kubeconfig: c.Kubeconfig, Namespace: leaseNamespace,
			Args: strings.Fields(o.agentArgs),
		})
		if err := a.Start(); err != nil {
			return c, agents, err
		}
		agents = append(agents, a)
	}
	return c, agents, nil
}

// creator creates Services at a steady rate, and records when each
// Create was sent.
type creator struct {
	wg      sync.WaitGroup
	mu      sync.Mutex
	created map[string]time.Time
}

// create runs until run ends; ctx is for the API calls.
func (r *creator) create(run, ctx context.Context, client kubernetes.Interface, rate float64) {
	defer r.wg.Done()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-run.Done():
			return
		case <-tick.C:
		}
		name := fmt.Sprintf("svc-%05d", i)
		t0 := time.Now()
		if _, err := client.CoreV1().Services(benchNamespace).Create(ctx, service(name), metav1.CreateOptions{}); err != nil {
			logf("creating %s: %v", name, err)
			continue
		}
		r.mu.Lock()
		r.created[name] = t0
		r.mu.Unlock()
	}
}

// killLeaders kills the agent holding the Lease every killEvery until run
// ends, starts it again a second later (as a kubelet restarts a
// container), and returns the gaps: from each kill to the next term.
func killLeaders(run, ctx context.Context, client kubernetes.Interface, agents []*agentproc.Agent, killEvery time.Duration) ([]gap, error) {
	var gaps []gap
	for {
		select {
		case <-run.Done():
			return gaps, nil
		case <-time.After(killEvery):
		}
		l, identity, err := holder(ctx, client, agents, "")
		if err != nil {
			return gaps, err
		}
		killed := time.Now()
		if err := l.Kill9(); err != nil {
			return gaps, err
		}
		time.Sleep(time.Second)
		if err := l.Start(); err != nil {
			return gaps, err
		}
		next, _, err := holder(ctx, client, agents, identity)
		if err != nil {
			return gaps, err
		}
		gaps = append(gaps, gap{killed, time.Now(), l.Name, next.Name})
		logf("killed %s; %s leads %s later", l.Name, next.Name, time.Since(killed).Round(time.Millisecond))
	}
}

// report prints create-to-address latencies, overall and for the Services
// created during a gap, the takeovers, and fails on a broken promise.
func report(o options, w *lbwatch.Watcher, created map[string]time.Time, gaps []gap) error {
	var all, inGap []time.Duration
	for name, t0 := range created {
		at, ok := w.FirstIPAt(name)
		if !ok {
			return fmt.Errorf("%s has no recorded first address", name)
		}
		d := at.Sub(t0)
		all = append(all, d)
		for _, g := range gaps {
			if !t0.Before(g.from) && t0.Before(g.to) {
				inGap = append(inGap, d)
				break
			}
		}
	}
	vs := w.Violations()
	fmt.Printf("bench-failover: %d Services at %.0f/s over %s, %d SIGKILLs of the allocating agent (every %s); agent flags %q\n",
		len(all), o.rate, o.duration, len(gaps), o.killEvery, o.agentArgs)
	fmt.Printf("%-44s %6s %9s %9s %9s %9s\n", "create -> first address", "n", "p50", "p90", "p99", "max")
	printRow("all Services", all)
	printRow("created between a kill and the next leader", inGap)
	var takeovers []time.Duration
	for _, g := range gaps {
		takeovers = append(takeovers, g.to.Sub(g.from))
	}
	printRow("kill -> Lease held by another agent", takeovers)
	fmt.Printf("duplicates or changed addresses seen by the watch: %d\n", len(vs))
	if len(vs) > 0 {
		return fmt.Errorf("broken promises:\n%s", lbwatch.Report(vs))
	}
	return nil
}

// gap is a time when no agent could allocate: from a kill to the next
// term's start.
type gap struct {
	from, to     time.Time
	killed, next string
}

func printRow(name string, ds []time.Duration) {
	if len(ds) == 0 {
		fmt.Printf("%-44s %6d\n", name, 0)
		return
	}
	slices.Sort(ds)
	q := func(p float64) string {
		i := int(p*float64(len(ds))+0.5) - 1
		i = max(0, min(i, len(ds)-1))
		return fmt.Sprintf("%.3fs", ds[i].Seconds())
	}
	fmt.Printf("%-44s %6d %9s %9s %9s %9s\n", name, len(ds), q(0.50), q(0.90), q(0.99), fmt.Sprintf("%.3fs", ds[len(ds)-1].Seconds()))
}

// holder waits until a running agent holds the LB IPAM Lease under an
// identity other than not ("<node>_<uuid>", one per process), and returns
// the agent and its identity.
func holder(ctx context.Context, client kubernetes.Interface, agents []*agentproc.Agent, not string) (*agentproc.Agent, string, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		l, err := client.CoordinationV1().Leases(leaseNamespace).Get(ctx, tables.LBIPAMLease, metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && *l.Spec.HolderIdentity != not {
			node, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
			for _, a := range agents {
				if a.Name == node && a.Running() {
					return a, *l.Spec.HolderIdentity, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil, "", errors.New("no agent took the LB IPAM Lease within 2 minutes")
}

func service(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
}
