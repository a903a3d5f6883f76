package faults

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/lbwatch"
	"github.com/heraldlb/herald/test/suite"
)

// waitFor polls cond until it holds; on timeout the test fails with what
// cond last saw and what the agents said.
func waitFor(t testing.TB, within time.Duration, cond func() (bool, string)) {
	t.Helper()
	suite.WaitFor(t, within, cond, unexpectedExits)
}

func unexpectedExits() string { return agentproc.UnexpectedExits(agents...) }

// logAgentsOnFailure prints every agent's logs if the test failed.
func logAgentsOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, a := range agents {
				t.Log(a.Logs(300))
			}
		}
	})
}

// leader returns the agent holding the LB IPAM Lease, waiting for one.
// Holder identities are "<node>_<uuid>".
func leader(t testing.TB) *agentproc.Agent {
	t.Helper()
	var found *agentproc.Agent
	waitFor(t, timeout, func() (bool, string) {
		l, err := kube.CoordinationV1().Leases(leaseNS).Get(context.Background(), tables.LBIPAMLease, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		node, _, _ := strings.Cut(holder, "_")
		for _, a := range agents {
			if a.Name == node && a.Running() {
				found = a
				return true, ""
			}
		}
		return false, fmt.Sprintf("Lease %s held by %q, no running agent of that node", tables.LBIPAMLease, holder)
	})
	return found
}

// namespace creates a fresh namespace for one test.
func namespace(t *testing.T, base string) string {
	t.Helper()
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: base + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
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

// createServices creates Services named prefix-0..n-1 with 16 clients.
func createServices(t testing.TB, ns, prefix string, n int) {
	t.Helper()
	names := make(chan string)
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				if _, err := kube.CoreV1().Services(ns).Create(context.Background(), service(name), metav1.CreateOptions{}); err != nil {
					failed.Store(err)
				}
			}
		}()
	}
	for i := range n {
		names <- fmt.Sprintf("%s-%d", prefix, i)
	}
	close(names)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("creating Services: %v", err)
	}
}

// waitAllHaveIPs waits until every Service of ns has an address: the
// watcher has seen one on each Service the API server lists (a Service
// created a moment ago may not have reached the watcher yet).
func waitAllHaveIPs(t testing.TB, w *lbwatch.Watcher, ns string) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		list, err := kube.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		missing := w.WithoutIPs()
		for _, s := range list.Items {
			if _, seen := w.FirstIPAt(s.Name); !seen && !slices.Contains(missing, s.Name) {
				missing = append(missing, s.Name)
			}
		}
		if len(missing) > 5 {
			missing = append(missing[:5], "...")
		}
		return len(missing) == 0, fmt.Sprintf("Services without an address: %v (%s)", missing, w.Summary())
	})
}

// churn creates and deletes Services until stopped, as a busy cluster does:
// a new one every 50 ms, one of the churned ones deleted every 150 ms.
type churn struct {
	ns      string
	stop    chan struct{}
	done    chan struct{}
	created atomic.Int64
	deleted atomic.Int64
	errs    atomic.Int64
}

func startChurn(ns string) *churn {
	c := &churn{ns: ns, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

func (c *churn) run() {
	defer close(c.done)
	rng := rand.New(rand.NewSource(1))
	var live []string
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		name := fmt.Sprintf("churn-%d", i)
		// Short timeouts: while the API server is unreachable the churn
		// keeps trying rather than hanging.
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if _, err := kube.CoreV1().Services(c.ns).Create(cctx, service(name), metav1.CreateOptions{}); err == nil {
			live = append(live, name)
			c.created.Add(1)
		} else {
			c.errs.Add(1)
		}
		cancel()
		if i%3 == 2 && len(live) > 0 {
			j := rng.Intn(len(live))
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := kube.CoreV1().Services(c.ns).Delete(cctx, live[j], metav1.DeleteOptions{})
			cancel()
			if err == nil || apierrors.IsNotFound(err) {
				live = append(live[:j], live[j+1:]...)
				c.deleted.Add(1)
			} else {
				c.errs.Add(1)
			}
		}
	}
}

func (c *churn) halt() {
	close(c.stop)
	<-c.done
}

func (c *churn) String() string {
	return fmt.Sprintf("%d created, %d deleted, %d failed calls", c.created.Load(), c.deleted.Load(), c.errs.Load())
}

// checkFinal lists the namespace and checks the end state directly: every
// Service has exactly one address and no two share one.
func checkFinal(t testing.TB, ns string) {
	t.Helper()
	list, err := kube.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, s := range list.Items {
		if len(s.Status.LoadBalancer.Ingress) != 1 {
			t.Errorf("%s has %d addresses, want 1", s.Name, len(s.Status.LoadBalancer.Ingress))
			continue
		}
		ip := s.Status.LoadBalancer.Ingress[0].IP
		if o, dup := owner[ip]; dup {
			t.Errorf("%s is held by %s and %s", ip, o, s.Name)
		}
		owner[ip] = s.Name
	}
	t.Logf("end state: %d Services, %d distinct addresses", len(list.Items), len(owner))
}
