package lbipam

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
)

// bulkTimeout bounds waits on a thousand Services.
const bulkTimeout = 5 * time.Minute

// A restart never re-IPs a Service: after kill -9, a new agent re-imports
// every IP from Service status and writes nothing.
func TestRestartKeepsAllIPs(t *testing.T) {
	const n = 1000
	a := startAgent(t, "node-a")
	s := newScenario(t)
	s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "big-pool"
spec:
  blocks:
  - cidr: "20.1.0.0/16"
`)
	createServices(t, s.ns, serviceNames(n))
	waitAllSatisfied(t, s.ns, n)
	waitSettled(t, a, s.ns, n, bulkTimeout)
	before := listServices(t, s.ns)

	// Lowest free first, no address twice: the Services hold exactly the
	// first n addresses of the pool.
	var all []netip.Addr
	for _, svc := range before {
		for _, ip := range ingressIPs(svc) {
			all = append(all, netip.MustParseAddr(ip))
		}
	}
	slices.SortFunc(all, netip.Addr.Compare)
	want := netip.MustParseAddr("20.1.0.0")
	for i, ip := range all {
		if ip != want {
			t.Fatalf("address %d of %d held is %s, want %s (the pool's lowest addresses, each once)", i, len(all), ip, want)
		}
		want = want.Next()
	}

	kill9(t, a)
	b := startAgent(t, "node-b")
	waitLeader(t, b) // after the killed agent's Lease expired
	waitSettled(t, b, s.ns, n, bulkTimeout)

	after := listServices(t, s.ns)
	changed := 0
	for name, old := range before {
		cur := after[name]
		if cur == nil {
			t.Errorf("%s disappeared", name)
			continue
		}
		if describeLB(cur) != describeLB(old) || cur.ResourceVersion != old.ResourceVersion {
			changed++
			if changed <= 10 {
				t.Errorf("%s changed across the restart:\n  before (resourceVersion %s): %s\n  after  (resourceVersion %s): %s",
					name, old.ResourceVersion, describeLB(old), cur.ResourceVersion, describeLB(cur))
			}
		}
	}
	if changed > 0 {
		t.Errorf("%d of %d Services were written after the restart; want none", changed, n)
	}
}

// Leader handover keeps every IP: with two agents, SIGTERM to the Lease
// holder lets the other take over; it allocates new IPs and moves none.
func TestLeaderHandoverKeepsAllIPs(t *testing.T) {
	const n = 50
	agents := map[string]*agentproc.Agent{}
	for _, name := range []string{"node-a", "node-b"} {
		agents[name] = startAgent(t, name)
	}
	s := newScenario(t)
	s.apply(bluePool)
	createServices(t, s.ns, serviceNames(n))
	waitAllSatisfied(t, s.ns, n)

	var leader, follower *agentproc.Agent
	waitFor(t, timeout, func() (bool, string) {
		holder, err := leaseHolder()
		if err != nil {
			return false, err.Error()
		}
		leader = agents[holder]
		return leader != nil, fmt.Sprintf("Lease holder %q is neither node-a nor node-b", holder)
	})
	for _, a := range agents {
		if a != leader {
			follower = a
		}
	}
	waitSettled(t, leader, s.ns, n, timeout)
	before := listServices(t, s.ns)
	t.Logf("%s holds the Lease; stopping it with SIGTERM", leader.Name)

	stopAgent(t, leader)
	t.Run("SIGTERM stops the leader cleanly and releases the Lease", func(t *testing.T) {
		// The agent has exited: a released Lease has no holder (or the
		// follower already took it).
		if exited, err := leader.Exited(); !exited || err != nil {
			t.Errorf("agent %s exited with %v after SIGTERM (exited: %v), want exit status 0", leader.Name, err, exited)
		}
		holder, err := leaseHolder()
		if err != nil {
			t.Fatal(err)
		}
		if holder == leader.Name {
			t.Errorf("after agent %s exited on SIGTERM the Lease %s/%s still names it as holder: it was not released, so the follower waits for it to expire", leader.Name, leaseNS, leaseName)
		}
	})

	waitLeader(t, follower)
	waitSettled(t, follower, s.ns, n, timeout)
	s.apply(serviceYAML("service-new", nil, nil))
	s.waitSatisfied("service-new", fmt.Sprintf("20.0.10.%d", n))

	after := listServices(t, s.ns)
	for name, old := range before {
		if got, want := describeLB(after[name]), describeLB(old); got != want {
			t.Errorf("%s changed across the handover:\n  before %s\n  after  %s", name, want, got)
		}
	}
}

// ---------------------------------------------------------------------------
// Bulk helpers
// ---------------------------------------------------------------------------

func serviceNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("service-%04d", i)
	}
	return names
}

// createServices creates LoadBalancer Services concurrently (16 at a time),
// without node ports.
func createServices(t testing.TB, ns string, names []string) {
	t.Helper()
	todo := make(chan string)
	errs := make(chan error, len(names))
	for range 16 {
		go func() {
			for name := range todo {
				svc := &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: corev1.ServiceSpec{
						Type:                          corev1.ServiceTypeLoadBalancer,
						AllocateLoadBalancerNodePorts: ptr.To(false),
						Ports:                         []corev1.ServicePort{{Port: 80}},
					},
				}
				_, err := kube.CoreV1().Services(ns).Create(t.Context(), svc, metav1.CreateOptions{})
				if err != nil {
					err = fmt.Errorf("creating service %s/%s: %w", ns, name, err)
				}
				errs <- err
			}
		}()
	}
	for _, name := range names {
		todo <- name
	}
	close(todo)
	for range names {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// listServices returns the namespace's Services by name.
func listServices(t testing.TB, ns string) map[string]*corev1.Service {
	t.Helper()
	list, err := kube.CoreV1().Services(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing services of %s: %v", ns, err)
	}
	out := make(map[string]*corev1.Service, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// waitAllSatisfied waits until all n Services of the namespace have one IP
// and a satisfied condition.
func waitAllSatisfied(t testing.TB, ns string, n int) {
	t.Helper()
	waitFor(t, bulkTimeout, func() (bool, string) {
		list, err := kube.CoreV1().Services(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ok := 0
		var example string
		for i := range list.Items {
			svc := &list.Items[i]
			conds := lbConditions(svc)
			if len(svc.Status.LoadBalancer.Ingress) == 1 && len(conds) == 1 &&
				conds[0].Status == metav1.ConditionTrue && conds[0].Reason == tables.ReasonSatisfied {
				ok++
			} else if example == "" {
				example = fmt.Sprintf("; e.g. %s: %s", svc.Name, describeLB(svc))
			}
		}
		return len(list.Items) == n && ok == n, fmt.Sprintf("%d of %d Services satisfied in %s%s", ok, n, ns, example)
	})
}
