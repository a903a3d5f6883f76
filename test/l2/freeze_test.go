package l2

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// freezeRounds is how many in-flight freezes TestFreezeAfterRenewal runs.
const freezeRounds = 20

// TestFreezeAfterRenewal (Lease election) freezes the owner's agent
// (SIGSTOP) right after
// the API server applied one of its Lease renewals and before the agent
// read the answer, and thaws it (SIGCONT) once another node took over.
// The thawed agent must neither trust the late answer (the renewal counts
// from when it was sent, long ago) nor release or rewrite the Lease the
// other node now holds. Throughout all rounds, at most one MAC answers any
// request. (Issue: in 2 of 3 such freezes both MACs answered 29-42
// requests, client-go's elector having released and re-taken the new
// holder's Lease.)
func TestFreezeAfterRenewal(t *testing.T) {
	useLeaseElection(t)
	s := newScenario(t)
	// Every node is eligible, the LB IPAM leader included: the Service
	// has its IP before the freezes start, and a frozen leader is just
	// replaced.
	s.createPolicy("freeze", nil)
	s.createService("web")
	vip := s.waitVIP("web")
	lease := leaseName(s.ns, "web")

	traps := map[*node]*renewalTrap{}
	for _, n := range nodes {
		traps[n] = trapRenewals(t, n, lease)
	}
	ensureAgents(t)

	start := client.Mark()
	prober := client.StartMarkedProber(vip, 20*time.Millisecond)
	defer func() { _, _ = prober.Stop() }()
	for round := 1; round <= freezeRounds; round++ {
		old := s.waitOwner("web", vip)
		trap := traps[old]
		before := client.Mark()
		trap.freezeAtNextRenewal(t, round)
		owner := s.waitOwner("web", vip, old)
		waitGratuitous(t, vip, owner, before)
		if err := old.Thaw(); err != nil {
			t.Fatal(err)
		}
		waitWithdrawn(t, old, vip)
		// Long enough for a thawed elector to release and re-take the
		// Lease, as client-go's did.
		time.Sleep(5 * retryPeriod)
		l, err := s.lease("web")
		if err != nil {
			t.Fatal(err)
		}
		if h := holderOf(l); h != owner.Name {
			t.Fatalf("round %d: after %s thawed, Lease %s is held by %q, want %s", round, old.Name, lease, h, owner.Name)
		}
		// The holder answers. Waited for, not sampled: on a loaded machine
		// a renewal answered late makes the holder's own fence withdraw the
		// IP for a moment and announce it again (the row is Pending then);
		// the prober above sees any second MAC.
		waitFor(t, func() (bool, string) {
			msg := announcedOn(owner, vip)
			return msg == "", fmt.Sprintf("round %d: after %s thawed, %s does not announce: %s", round, old.Name, owner.Name, msg)
		})
		t.Logf("round %d: froze %s after a renewal, %s took over, %s withdrew on thaw", round, old.Name, owner.Name, old.Name)
	}
	expectNoDoubleAnswers(t, vip, prober, start)
}

// renewalTrap runs a node's agent behind an API proxy that, once armed,
// freezes the agent as soon as the answer to a successful write of the
// Lease arrives, before the agent reads it.
type renewalTrap struct {
	n      *node
	mu     sync.Mutex
	armed  bool
	frozen chan struct{}
}

// trapRenewals restarts n's agent behind the trap's proxy; at the end of
// the test the agent is thawed and restarted without it.
func trapRenewals(t *testing.T, n *node, lease string) *renewalTrap {
	t.Helper()
	tr := &renewalTrap{n: n, frozen: make(chan struct{}, 1)}
	path := "/apis/coordination.k8s.io/v1/namespaces/" + leaseNS + "/leases/" + lease
	p, err := testCluster.StartProxy(lan.RootIP().String(), filepath.Join(workDir, n.Name, "proxy"), func(resp *http.Response) error {
		if resp.Request.Method != http.MethodPut || resp.Request.URL.Path != path || resp.StatusCode != http.StatusOK {
			return nil
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if !tr.armed {
			return nil
		}
		tr.armed = false
		if err := n.Freeze(); err != nil {
			return fmt.Errorf("freezing %s: %w", n.Name, err)
		}
		tr.frozen <- struct{}{}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	direct := n.Kubeconfig
	restart := func(kubeconfig string) {
		_ = n.Thaw()
		if err := n.Stop(); err != nil {
			t.Error(err)
		}
		n.Kubeconfig = kubeconfig
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
	}
	restart(p.Kubeconfig)
	t.Cleanup(func() {
		restart(direct)
		p.Close()
	})
	return tr
}

// freezeAtNextRenewal arms the trap and waits until it froze the agent.
func (tr *renewalTrap) freezeAtNextRenewal(t *testing.T, round int) {
	t.Helper()
	tr.mu.Lock()
	tr.armed = true
	tr.mu.Unlock()
	select {
	case <-tr.frozen:
	case <-time.After(timeout):
		t.Fatalf("round %d: no renewal by %s passed its proxy", round, tr.n.Name)
	}
}
