package lbipam

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/statedb/reconciler"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/suite"
)

// timeout bounds every wait. It is generous on purpose: tests check
// outcomes, never durations.
const timeout = 60 * time.Second

// Names the spec and the agent share with these tests.
const (
	leaseName     = "herald-lb-ipam"
	leaseNS       = metav1.NamespaceSystem
	fieldManager  = "lbipam-test"
	conditionType = tables.ConditionRequestSatisfied
)

// ---------------------------------------------------------------------------
// Waiting
// ---------------------------------------------------------------------------

// waitFor polls cond every 100ms until it reports true. On timeout the test
// fails with cond's last description of what it saw.
func waitFor(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	suite.WaitFor(t, timeout, cond, deadAgents)
}

// ---------------------------------------------------------------------------
// The agent as a subprocess (test/agentproc)
// ---------------------------------------------------------------------------

var (
	agentsMu sync.Mutex
	agents   []*agentproc.Agent // every agent started, to report unexpected exits
)

// startAgent runs herald-agent on the host as the spec's deployment would,
// with --enable-ipv6 and any extra flags. It is stopped with SIGTERM when
// the test ends, and its log is printed if the test failed.
func startAgent(t *testing.T, nodeName string, extraFlags ...string) *agentproc.Agent {
	t.Helper()
	// Unix socket paths are limited to 108 bytes: keep the directory short.
	dir, err := os.MkdirTemp("", "herald-agent-")
	if err != nil {
		t.Fatal(err)
	}
	a := agentproc.New(agentproc.Options{
		Name:       nodeName,
		Dir:        dir,
		AgentBin:   agentBin,
		DbgBin:     dbgBin,
		Kubeconfig: testCluster.Kubeconfig,
		Namespace:  leaseNS,
		Args:       append([]string{"--enable-ipv6"}, extraFlags...),
	})
	if err := a.Start(); err != nil {
		_ = os.RemoveAll(dir)
		t.Fatal(err)
	}
	agentsMu.Lock()
	agents = append(agents, a)
	agentsMu.Unlock()
	t.Logf("started agent %s (pid %d) in %s with %s", nodeName, a.PID(), dir, strings.Join(a.Args, " "))

	t.Cleanup(func() {
		stopAgent(t, a)
		if t.Failed() || os.Getenv("LBIPAM_AGENT_LOGS") != "" {
			t.Log(a.Logs(400))
		}
		agentsMu.Lock()
		agents = slices.DeleteFunc(agents, func(x *agentproc.Agent) bool { return x == a })
		agentsMu.Unlock()
		_ = os.RemoveAll(dir)
	})
	return a
}

// stopAgent sends SIGTERM, as the kubelet does, and waits for the agent to
// exit. It releases its Lease on the way out.
func stopAgent(t testing.TB, a *agentproc.Agent) {
	t.Helper()
	endAgent(t, a, "SIGTERM", a.Stop)
}

// kill9 kills the agent with SIGKILL: no cleanup, the Lease stays held
// until it expires.
func kill9(t testing.TB, a *agentproc.Agent) {
	t.Helper()
	endAgent(t, a, "SIGKILL", a.Kill9)
}

func endAgent(t testing.TB, a *agentproc.Agent, sig string, end func() error) {
	t.Helper()
	if !a.Running() {
		return
	}
	if err := end(); err != nil {
		t.Error(err)
		return
	}
	_, status := a.Exited()
	t.Logf("agent %s exited after %s: %v", a.Name, sig, status)
}

// deadAgents describes agents that exited without being asked to, for
// timeout messages.
func deadAgents() string {
	agentsMu.Lock()
	defer agentsMu.Unlock()
	return agentproc.UnexpectedExits(agents...)
}

// allocationsIn returns the agent's lb-allocations rows for Services in
// namespace ns.
func allocationsIn(a *agentproc.Agent, ns string) ([]*tables.LBAllocation, error) {
	rows, err := agentproc.Table[*tables.LBAllocation](a, tables.LBAllocationsTableName)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(rows, func(r *tables.LBAllocation) bool { return r.Namespace != ns }), nil
}

// waitSettled waits until the agent has decided for exactly n Services of
// namespace ns and has written every decision (reconciliation status Done).
func waitSettled(t testing.TB, a *agentproc.Agent, ns string, n int, timeout time.Duration) []*tables.LBAllocation {
	t.Helper()
	var rows []*tables.LBAllocation
	waitFor(t, timeout, func() (bool, string) {
		var err error
		rows, err = allocationsIn(a, ns)
		if err != nil {
			return false, err.Error()
		}
		done := 0
		for _, r := range rows {
			if r.Status.Kind == reconciler.StatusKindDone {
				done++
			}
		}
		return len(rows) == n && done == n,
			fmt.Sprintf("agent %s: want %d lb-allocations rows in namespace %s, all Done; have %d rows, %d Done", a.Name, n, ns, len(rows), done)
	})
	return rows
}

// waitSeen waits until the Service is in the agent's services table.
func waitSeen(t testing.TB, a *agentproc.Agent, ns, name string) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		rows, err := agentproc.Table[*tables.Service](a, tables.ServicesTableName)
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(rows, func(r *tables.Service) bool { return r.Namespace == ns && r.Name == name }),
			fmt.Sprintf("agent %s: service %s/%s is not in its %s table", a.Name, ns, name, tables.ServicesTableName)
	})
}

// leaseHolder returns the node of the LB IPAM Lease's holder ("" if none).
// An agent's identity is "<node>_<uuid>", unique per process.
func leaseHolder() (string, error) {
	l, err := kube.CoordinationV1().Leases(leaseNS).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	node, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return node, nil
}

// waitLeader waits until the agent holds the LB IPAM Lease.
func waitLeader(t testing.TB, a *agentproc.Agent) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		holder, err := leaseHolder()
		if err != nil {
			return false, fmt.Sprintf("Lease %s/%s: %v", leaseNS, leaseName, err)
		}
		return holder == a.Name, fmt.Sprintf("Lease %s/%s holderIdentity is %q, want %q", leaseNS, leaseName, holder, a.Name)
	})
}

// ---------------------------------------------------------------------------
// Scenario: a namespace and the objects a test applied
// ---------------------------------------------------------------------------

// scenario is one test's world: its namespace(s) and the pools it created.
// Everything is deleted when the test ends.
type scenario struct {
	t          *testing.T
	ns         string // the namespace the spec calls "example"
	namespaces []string
	pools      []string
}

// newScenario starts from a cluster without pools (removing any left by an
// earlier test) and creates the scenario's namespace.
func newScenario(t *testing.T) *scenario {
	t.Helper()
	deleteAllPools(t)
	s := &scenario{t: t}
	t.Cleanup(s.cleanup)
	s.ns = s.namespace("example")
	return s
}

// namespace creates a namespace named base-<random>; the suffix keeps
// tests independent (without kube-controller-manager, deleted namespaces
// stay Terminating forever).
func (s *scenario) namespace(base string) string {
	s.t.Helper()
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: base + "-"}}, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatalf("creating namespace: %v", err)
	}
	s.namespaces = append(s.namespaces, ns.Name)
	return ns.Name
}

func (s *scenario) cleanup() {
	ctx := context.Background()
	for _, ns := range s.namespaces {
		deleteServices(s.t, ns)
		_ = kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	}
	for _, name := range s.pools {
		deletePool(s.t, name)
	}
}

// apply applies manifests as `kubectl apply --server-side` would.
// Namespaced objects go to the scenario's namespace whatever their
// metadata.namespace says (the spec's examples use "example").
func (s *scenario) apply(manifests string) { s.t.Helper(); s.applyIn(s.ns, manifests) }

// applyIn is apply into namespace ns.
func (s *scenario) applyIn(ns, manifests string) {
	s.t.Helper()
	for _, doc := range splitYAML(manifests) {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			s.t.Fatalf("manifest is not YAML: %v\n%s", err, doc)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			s.t.Fatalf("manifest: %v\n%s", err, doc)
		}
		gvr, namespaced := resourceFor(s.t, obj.GroupVersionKind())
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if namespaced {
			obj.SetNamespace(ns)
			ri = dyn.Resource(gvr).Namespace(ns)
		}
		if _, err := ri.Apply(context.Background(), obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			s.t.Fatalf("applying %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		if gvr == poolGVR && !slices.Contains(s.pools, obj.GetName()) {
			s.pools = append(s.pools, obj.GetName())
		}
	}
}

func resourceFor(t testing.TB, gvk schema.GroupVersionKind) (gvr schema.GroupVersionResource, namespaced bool) {
	t.Helper()
	switch gvk {
	case corev1.SchemeGroupVersion.WithKind("Service"):
		return corev1.SchemeGroupVersion.WithResource("services"), true
	case v2alpha1.SchemeGroupVersion.WithKind(v2alpha1.PoolKind):
		return poolGVR, false
	}
	t.Fatalf("no resource known for %s", gvk)
	return schema.GroupVersionResource{}, false
}

// deleteService deletes a Service of the scenario's namespace.
func (s *scenario) deleteService(name string) {
	s.t.Helper()
	if err := kube.CoreV1().Services(s.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		s.t.Fatalf("deleting service %s/%s: %v", s.ns, name, err)
	}
}

// deletePool deletes a pool and waits until it is gone.
func (s *scenario) deletePool(name string) { s.t.Helper(); deletePool(s.t, name) }

func deletePool(t testing.TB, name string) {
	t.Helper()
	pools := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	if err := pools.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting pool %s: %v", name, err)
		return
	}
	waitFor(t, timeout, func() (bool, string) {
		_, err := pools.Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("pool %s still exists (%v)", name, err)
	})
}

func deleteAllPools(t testing.TB) {
	t.Helper()
	list, err := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pools: %v", err)
	}
	for _, p := range list.Items {
		t.Logf("deleting pool %s left over by an earlier test", p.Name)
		deletePool(t, p.Name)
	}
}

// deleteServices deletes every Service of a namespace (Services have no
// deletecollection) and waits until they are gone.
func deleteServices(t testing.TB, ns string) {
	t.Helper()
	ctx := context.Background()
	svcs := kube.CoreV1().Services(ns)
	list, err := svcs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("listing services of %s: %v", ns, err)
		return
	}
	names := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				if err := svcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("deleting service %s/%s: %v", ns, name, err)
				}
			}
		}()
	}
	for _, svc := range list.Items {
		names <- svc.Name
	}
	close(names)
	wg.Wait()
	waitFor(t, timeout, func() (bool, string) {
		list, err := svcs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d services left in %s", len(list.Items), ns)
	})
}

// ---------------------------------------------------------------------------
// Services
// ---------------------------------------------------------------------------

// service reads a Service of the scenario's namespace.
func (s *scenario) service(name string) *corev1.Service {
	s.t.Helper()
	svc, err := kube.CoreV1().Services(s.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatalf("getting service %s/%s: %v", s.ns, name, err)
	}
	return svc
}

// ingressIPs returns status.loadBalancer.ingress[].ip in order.
func ingressIPs(svc *corev1.Service) []string {
	var ips []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		ips = append(ips, in.IP)
	}
	return ips
}

// lbConditions returns the Service's io.cilium/lb-ipam-request-satisfied
// conditions (there should never be more than one).
func lbConditions(svc *corev1.Service) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range svc.Status.Conditions {
		if c.Type == conditionType {
			out = append(out, c)
		}
	}
	return out
}

// describeLB renders what LB IPAM wrote on a Service, for messages.
func describeLB(svc *corev1.Service) string {
	conds := lbConditions(svc)
	var cs []string
	for _, c := range conds {
		cs = append(cs, fmt.Sprintf("{status: %s, reason: %q, message: %q}", c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("ingress %q, %s conditions [%s]", ingressIPs(svc), conditionType, strings.Join(cs, ", "))
}

// waitService waits until the Service's ingress IPs are exactly wantIPs
// (in order) and it has exactly one io.cilium/lb-ipam-request-satisfied
// condition with the given status, reason and message.
func (s *scenario) waitService(name string, status metav1.ConditionStatus, reason, message string, wantIPs ...string) *corev1.Service {
	s.t.Helper()
	return waitServiceIn(s.t, s.ns, name, status, reason, message, wantIPs...)
}

func waitServiceIn(t testing.TB, ns, name string, status metav1.ConditionStatus, reason, message string, wantIPs ...string) *corev1.Service {
	t.Helper()
	var svc *corev1.Service
	want := fmt.Sprintf("ingress %q, %s conditions [{status: %s, reason: %q, message: %q}]", wantIPs, conditionType, status, reason, message)
	waitFor(t, timeout, func() (bool, string) {
		var err error
		svc, err = kube.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := describeLB(svc)
		return got == want, fmt.Sprintf("service %s/%s:\n  have %s\n  want %s", ns, name, got, want)
	})
	return svc
}

// waitSatisfied waits until the Service holds exactly wantIPs, in order,
// and its condition says satisfied.
func (s *scenario) waitSatisfied(name string, wantIPs ...string) *corev1.Service {
	s.t.Helper()
	return s.waitService(name, metav1.ConditionTrue, tables.ReasonSatisfied, "", wantIPs...)
}

// waitPending waits until the Service has no IP and its condition is False
// with the given reason and message.
func (s *scenario) waitPending(name, reason, message string) *corev1.Service {
	s.t.Helper()
	return s.waitService(name, metav1.ConditionFalse, reason, message)
}

// waitUntouched waits until LB IPAM has nothing on the Service: no ingress
// and no condition.
func (s *scenario) waitUntouched(name string) {
	s.t.Helper()
	waitFor(s.t, timeout, func() (bool, string) {
		svc := s.service(name)
		return len(svc.Status.LoadBalancer.Ingress) == 0 && len(lbConditions(svc)) == 0,
			fmt.Sprintf("service %s/%s: want no ingress and no %s condition, have %s", s.ns, name, conditionType, describeLB(svc))
	})
}

// waitEvent waits for an Event on the Service with the reason and exact
// message.
func (s *scenario) waitEvent(svc, reason, message string) {
	s.t.Helper()
	waitFor(s.t, timeout, func() (bool, string) {
		list, err := kube.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Service,involvedObject.name=" + svc + ",reason=" + reason,
		})
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, e := range list.Items {
			if e.Message == message {
				return true, ""
			}
			msgs = append(msgs, e.Message)
		}
		return false, fmt.Sprintf("service %s/%s: want an Event %s %q, have %s Events %q", s.ns, svc, reason, message, reason, msgs)
	})
}

// ---------------------------------------------------------------------------
// Pools
// ---------------------------------------------------------------------------

func getPool(name string) (*v2alpha1.CiliumLoadBalancerIPPool, error) {
	return herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Get(context.Background(), name, metav1.GetOptions{})
}

func poolCondition(p *v2alpha1.CiliumLoadBalancerIPPool, typ string) (metav1.Condition, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// waitPoolCondition waits until the pool's condition of type typ has the
// given status, reason and message, for the pool's current generation.
func (s *scenario) waitPoolCondition(pool, typ string, status metav1.ConditionStatus, reason, message string) {
	s.t.Helper()
	want := fmt.Sprintf("{status: %s, reason: %q, message: %q}", status, reason, message)
	waitFor(s.t, timeout, func() (bool, string) {
		p, err := getPool(pool)
		if err != nil {
			return false, err.Error()
		}
		c, ok := poolCondition(p, typ)
		if !ok {
			return false, fmt.Sprintf("pool %s has no condition %s", pool, typ)
		}
		got := fmt.Sprintf("{status: %s, reason: %q, message: %q}", c.Status, c.Reason, c.Message)
		if got == want && c.ObservedGeneration != p.Generation {
			got += fmt.Sprintf(" for generation %d, want generation %d", c.ObservedGeneration, p.Generation)
		}
		return got == want, fmt.Sprintf("pool %s condition %s:\n  have %s\n  want %s", pool, typ, got, want)
	})
}

// waitPoolCounts waits until the pool's IPsTotal, IPsAvailable and IPsUsed
// conditions (Unknown, reason noreason) carry these exact decimal counts.
func (s *scenario) waitPoolCounts(pool, total, available, used string) {
	s.t.Helper()
	s.waitPoolCondition(pool, tables.ConditionIPsTotal, metav1.ConditionUnknown, tables.ReasonNoReason, total)
	s.waitPoolCondition(pool, tables.ConditionIPsAvailable, metav1.ConditionUnknown, tables.ReasonNoReason, available)
	s.waitPoolCondition(pool, tables.ConditionIPsUsed, metav1.ConditionUnknown, tables.ReasonNoReason, used)
}

// ---------------------------------------------------------------------------
// kubectl
// ---------------------------------------------------------------------------

// kubectl runs kubectl against the test cluster and returns its stdout.
func kubectl(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	full := append([]string{"--kubeconfig", testCluster.Kubeconfig, "--cache-dir", kubectlCacheDir}, args...)
	cmd := exec.CommandContext(ctx, "kubectl", full...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// table parses kubectl's human-readable output into rows of
// whitespace-separated fields (the header is row 0).
func table(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// rowOf returns the row of a kubectl table whose first field is name. The
// tests read its first four fields, which always exist (kubectl prints
// "<none>" for an empty column).
func rowOf(t testing.TB, out, name string) []string {
	t.Helper()
	for _, r := range table(out) {
		if len(r) > 0 && r[0] == name {
			if len(r) < 4 {
				t.Fatalf("row %q has fewer than 4 fields:\n%s", name, out)
			}
			return r
		}
	}
	t.Fatalf("no row %q in:\n%s", name, out)
	return nil
}

// ---------------------------------------------------------------------------
// Manifests
// ---------------------------------------------------------------------------

// bluePool is the one-block pool most tests start from.
const bluePool = `
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
`

// dualPool has a block of each family.
const dualPool = `
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "dual-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  - cidr: "2004::0/64"
`

// serviceYAML renders the spec's simple LoadBalancer Service (port 1234)
// with the given labels and annotations; specLines are added to its spec
// (a "ports:" line replaces the default port).
func serviceYAML(name string, labels, annotations map[string]string, specLines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n  namespace: example\n", name)
	writeMap(&b, "labels", labels)
	writeMap(&b, "annotations", annotations)
	b.WriteString("spec:\n  type: LoadBalancer\n")
	hasPorts := false
	for _, l := range specLines {
		hasPorts = hasPorts || strings.HasPrefix(l, "ports:")
	}
	if !hasPorts {
		b.WriteString("  ports:\n  - port: 1234\n")
	}
	for _, l := range specLines {
		for _, sub := range strings.Split(l, "\n") {
			b.WriteString("  " + sub + "\n")
		}
	}
	return b.String()
}

func writeMap(b *strings.Builder, key string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(b, "  %s:\n", key)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(b, "    %q: %q\n", k, m[k])
	}
}
