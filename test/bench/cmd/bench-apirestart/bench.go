package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
)

const (
	leaseNamespace = "kube-system"
	benchNamespace = "herald-bench"
	poolCIDR       = "198.19.0.0/16" // data only: nothing is announced
)

// bench is the cluster the builds take turns on.
type bench struct {
	o    options
	work string
	c    *cluster.Cluster
	n    int // cycles so far, for unique names
}

func newBench(ctx context.Context, work string, o options) (*bench, error) {
	c, err := cluster.Start(cluster.Options{})
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, work: work, c: c}
	if err := b.setup(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return b, nil
}

func (b *bench) close() { b.c.Stop() }

func (b *bench) setup(ctx context.Context) error {
	root := cluster.RepoRoot()
	if err := b.c.InstallCRDs(ctx, filepath.Join(root, "install", "crds")); err != nil {
		return err
	}
	for _, ns := range []string{leaseNamespace, benchNamespace} {
		if _, err := b.c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	herald, err := versioned.NewForConfig(b.c.RESTConfig)
	if err != nil {
		return err
	}
	_, err = herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Create(ctx, &v2alpha1.CiliumLoadBalancerIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec:       v2alpha1.CiliumLoadBalancerIPPoolSpec{Blocks: []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: poolCIDR}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return os.WriteFile(b.policyPath(), []byte(auditPolicy), 0o644)
}

// checkout writes the tree of git revision ref under dir.
func checkout(root, ref, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("sh", "-c", `git archive --format=tar "$1" | tar -x -C "$2"`, "checkout", ref, dir)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("git archive %s: %w\n%s", ref, err, out)
	}
	return dir, nil
}

// runBuild starts three agents of bd, runs the cycles, and stops them.
func (b *bench) runBuild(ctx context.Context, bd build) ([]cycle, error) {
	var agents []*agentproc.Agent
	defer func() {
		for _, a := range agents {
			_ = a.Stop()
		}
	}()
	dir := filepath.Join(b.work, strings.ReplaceAll(bd.name, " ", "-"))
	for i := range 3 {
		a := agentproc.New(agentproc.Options{
			Name: fmt.Sprintf("node%d", i+1), Dir: filepath.Join(dir, fmt.Sprintf("node%d", i+1)),
			AgentBin: bd.agent, DbgBin: bd.dbgBin, Kubeconfig: b.c.Kubeconfig, Namespace: leaseNamespace,
			HealthAddr: fmt.Sprintf("127.0.0.1:%d", b.o.port+i),
		})
		if err := a.Start(); err != nil {
			return nil, err
		}
		agents = append(agents, a)
	}
	var out []cycle
	for i := range b.o.cycles {
		if err := waitSettled(ctx, b.c, agents); err != nil {
			return nil, err
		}
		c, err := b.cycle(ctx, agents)
		if err != nil {
			return nil, fmt.Errorf("cycle %d: %w", i+1, err)
		}
		logf("%s, cycle %d: healthy %s, Service address %s after ready; %d agent requests", bd.name, i+1,
			fmtDur(c.healthy), fmtDur(c.address), len(c.requests))
		out = append(out, c)
	}
	return out, nil
}

// waitSettled waits until every agent is healthy and one holds the Lease.
func waitSettled(ctx context.Context, c *cluster.Cluster, agents []*agentproc.Agent) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ok := true
		for _, a := range agents {
			if code, _, err := a.Healthz(); err != nil || code != http.StatusOK {
				ok = false
			}
		}
		l, err := c.Client.CoordinationV1().Leases(leaseNamespace).Get(ctx, tables.LBIPAMLease, metav1.GetOptions{})
		if ok && err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("agents not healthy with a leader within 2 minutes:\n%s", agentproc.UnexpectedExits(agents...))
}

// cycle is what one kill/restart measured.
type cycle struct {
	healthy  time.Duration // ready -> every agent's /healthz OK (negative: before ready)
	address  time.Duration // ready -> the Service created at ready has an address
	degraded bool          // every agent said Degraded during the outage
	requests []request     // the agents' requests to the restarted API server
	ready    time.Time
}

func (b *bench) cycle(ctx context.Context, agents []*agentproc.Agent) (cycle, error) {
	b.n++
	argv, err := b.c.KillAPIServer()
	if err != nil {
		return cycle{}, err
	}
	killed := time.Now()
	h := watchHealth(agents, killed)
	defer h.stop()
	select {
	case <-ctx.Done():
		return cycle{}, ctx.Err()
	case <-time.After(b.o.down):
	}
	audit := filepath.Join(b.work, fmt.Sprintf("audit-%d.log", b.n))
	started := time.Now()
	if err := b.c.StartAPIServer(withAudit(argv, b.policyPath(), audit)); err != nil {
		return cycle{}, err
	}
	ready := time.Now()
	name := fmt.Sprintf("after-restart-%d", b.n)
	if _, err := b.c.Client.CoreV1().Services(benchNamespace).Create(ctx, service(name), metav1.CreateOptions{}); err != nil {
		return cycle{}, fmt.Errorf("creating %s: %w", name, err)
	}
	got, err := waitAddress(ctx, b.c, name)
	if err != nil {
		return cycle{}, err
	}
	healthy, degraded, err := h.wait(ready)
	if err != nil {
		return cycle{}, err
	}
	time.Sleep(time.Until(started.Add(b.o.window)))
	reqs, err := readAudit(audit, started, started.Add(b.o.window))
	if err != nil {
		return cycle{}, err
	}
	return cycle{healthy: healthy, address: got.Sub(ready), degraded: degraded, requests: reqs, ready: ready}, nil
}

func (b *bench) policyPath() string { return filepath.Join(b.work, "audit-policy.yaml") }

// waitAddress polls the Service until its status has an address.
func waitAddress(ctx context.Context, c *cluster.Cluster, name string) (time.Time, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		s, err := c.Client.CoreV1().Services(benchNamespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && len(s.Status.LoadBalancer.Ingress) > 0 {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return time.Time{}, fmt.Errorf("%s has no address 2 minutes after the restart", name)
}

// health polls every agent's /healthz from the kill on: whether each said
// Degraded, and when each last turned OK.
type health struct {
	mu       sync.Mutex
	degraded map[string]bool
	okSince  map[string]time.Time // zero while not OK
	done     chan struct{}
	wg       sync.WaitGroup
}

func watchHealth(agents []*agentproc.Agent, from time.Time) *health {
	h := &health{degraded: map[string]bool{}, okSince: map[string]time.Time{}, done: make(chan struct{})}
	for _, a := range agents {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			for {
				code, _, err := a.Healthz()
				now := time.Now()
				h.mu.Lock()
				switch {
				case err == nil && code == http.StatusOK:
					if h.okSince[a.Name].IsZero() {
						h.okSince[a.Name] = now
					}
				default:
					h.degraded[a.Name] = true
					h.okSince[a.Name] = time.Time{}
				}
				h.mu.Unlock()
				select {
				case <-h.done:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
	return h
}

// wait waits until every agent is OK, and returns when the last turned OK,
// relative to ready, and whether every agent said Degraded since the kill.
func (h *health) wait(ready time.Time) (time.Duration, bool, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		var last time.Time
		all, degraded := len(h.okSince) > 0, true
		for name, since := range h.okSince {
			all = all && !since.IsZero()
			degraded = degraded && h.degraded[name]
			if since.After(last) {
				last = since
			}
		}
		h.mu.Unlock()
		if all {
			return last.Sub(ready), degraded, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, false, fmt.Errorf("not every agent's /healthz OK within 2 minutes of the restart")
}

func (h *health) stop() {
	close(h.done)
	h.wg.Wait()
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

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
