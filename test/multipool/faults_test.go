package multipool

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cnitypes "github.com/containernetworking/cni/pkg/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/cells/podipam/nodeipam"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/ipamwatch"
)

// createPool creates a pool for one test and deletes it at the end.
func createPool(t *testing.T, name string, v4 []string, mask4 uint8) {
	t.Helper()
	p := &v2alpha1.CiliumPodIPPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v2alpha1.IPPoolSpec{IPv4: &v2alpha1.IPv4PoolSpec{MaskSize: mask4}}}
	for _, c := range v4 {
		p.Spec.IPv4.CIDRs = append(p.Spec.IPv4.CIDRs, v2alpha1.PoolCIDR(c))
	}
	if _, err := herald.CiliumV2alpha1().CiliumPodIPPools().Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := herald.CiliumV2alpha1().CiliumPodIPPools().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting pool %s: %v", name, err)
		}
	})
}

// setPoolCIDRs replaces a pool's IPv4 CIDRs.
func setPoolCIDRs(t *testing.T, name string, v4 ...string) {
	t.Helper()
	pools := herald.CiliumV2alpha1().CiliumPodIPPools()
	waitFor(t, timeout, func() (bool, string) {
		p, err := pools.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p.Spec.IPv4.CIDRs = nil
		for _, c := range v4 {
			p.Spec.IPv4.CIDRs = append(p.Spec.IPv4.CIDRs, v2alpha1.PoolCIDR(c))
		}
		_, err = pools.Update(context.Background(), p, metav1.UpdateOptions{})
		return err == nil, fmt.Sprintf("updating pool %s: %v", name, err)
	})
}

// poolCondition waits until the pool's condition has the status and a
// message containing want.
func waitPoolCondition(t *testing.T, pool, typ string, status metav1.ConditionStatus, want string) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		p, err := herald.CiliumV2alpha1().CiliumPodIPPools().Get(context.Background(), pool, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == typ {
				return c.Status == status && strings.Contains(c.Message, want),
					fmt.Sprintf("pool %s condition %s: %s %q, want %s containing %q", pool, typ, c.Status, c.Message, status, want)
			}
		}
		return false, fmt.Sprintf("pool %s has no condition %s (%+v)", pool, typ, p.Status.Conditions)
	})
}

// waitEvent waits for a Warning Event on an object (in any namespace when
// ns is empty: those of cluster-scoped objects are in "default") with the
// reason and a message containing want.
func waitEvent(t *testing.T, ns, kind, name, reason, want string) {
	t.Helper()
	waitEventOfType(t, corev1.EventTypeWarning, ns, kind, name, reason, want)
}

// waitEventOfType is waitEvent for an Event of the given type.
func waitEventOfType(t *testing.T, typ, ns, kind, name, reason, want string) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		evs, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name + ",reason=" + reason,
		})
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, e := range evs.Items {
			if e.Type == typ && strings.Contains(e.Message, want) {
				return true, ""
			}
			msgs = append(msgs, e.Type+": "+e.Message)
		}
		return false, fmt.Sprintf("no %s Event %s on %s %s containing %q (seen %q)", typ, reason, kind, name, want, msgs)
	})
}

// only IPv4 from this pool: the suite's nodes are dual-stack, so the IPv6
// address of these pods comes from the default pool.
func v4pool(name string) map[string]string { return map[string]string{tables.AnnotationIPv4Pool: name} }

// TestExhaustionAndReclaim: a pool out of addresses fails the ADD with an
// error naming it (after waiting for a CIDR that cannot come), a Warning
// Event on the Pod and one on the pool, the pool's Exhausted condition and
// the node's CiliumNode operator-status.error, all naming the pool;
// pods deleted give their addresses back to the same node at once, and
// their CIDRs back to the pool for another node, without any restart.
func TestExhaustionAndReclaim(t *testing.T) {
	logAgentsOnFailure(t)
	// Two /29 CIDRs of 5 usable addresses each: 10 in all.
	createPool(t, "tiny", []string{"198.18.112.0/28"}, 29)
	ns := namespace(t, "tiny", v4pool("tiny"))
	n1, n2 := nodes[0], nodes[1]
	var pods []*pod
	for i := 0; i < 10; i++ {
		pods = append(pods, startPod(t, n1, ns, fmt.Sprintf("t%d", i), nil))
	}
	seen := map[netip.Addr]bool{}
	for _, p := range pods {
		a := p.ipOf(tables.IPv4)
		if seen[a] || !mustPrefix("198.18.112.0/28").Contains(a) {
			t.Fatalf("pod %s got %s: duplicate or outside the pool", p.Name, a)
		}
		seen[a] = true
	}

	over := newPod(t, n1, ns, "over", nil)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := over.add(ctx)
	var cniErr *cnitypes.Error
	if !errors.As(err, &cniErr) || cniErr.Code != ipamv1.CodePoolExhausted || !strings.Contains(cniErr.Msg, `pool "tiny"`) {
		t.Fatalf("ADD beyond the pool: %v, want CNI error %d naming pool tiny", err, ipamv1.CodePoolExhausted)
	}
	t.Logf("ADD beyond the pool refused with code %d after %s", cniErr.Code, time.Since(start).Round(time.Millisecond))
	waitPoolCondition(t, "tiny", tables.ConditionPodPoolExhausted, metav1.ConditionTrue, "node1 needs")
	// The pod, the pool and the node each say why, naming the pool.
	waitEvent(t, ns, "Pod", "over", nodeipam.EventPoolExhausted, `pool "tiny"`)
	waitEvent(t, "", "CiliumPodIPPool", "tiny", tables.ReasonPodPoolExhausted, "node1 needs")
	waitOperatorError(t, n1.name, func(msg string) bool { return strings.Contains(msg, `from pool "tiny"`) })
	waitMetrics(t, n1, map[string]float64{
		`herald_ipam_node_addresses{pool="tiny",family="ipv4",state="in_use"}`:     10,
		`herald_ipam_node_addresses{pool="tiny",family="ipv4",state="capacity"}`:   10,
		`herald_ipam_node_cidrs{pool="tiny",family="ipv4"}`:                        2,
		`herald_ipam_cni_requests_total{operation="add",outcome="pool_exhausted"}`: 1,
	})
	waitMetrics(t, leaderOf(t, tables.PodIPAMLease), map[string]float64{
		`herald_ipam_pool_cidrs{pool="tiny",family="ipv4",state="allocated"}`:     2,
		`herald_ipam_pool_cidrs{pool="tiny",family="ipv4",state="total"}`:         2,
		`herald_ipam_pool_condition{pool="tiny",condition="cilium.io/Exhausted"}`: 1,
	})
	_ = n1.rt.Del(ctx, over.Pod) // the runtime cleans up the failed ADD

	// Same node: a pod goes, its address serves the next one at once.
	pods[3].stop(t)
	if err := over.add(ctx); err != nil {
		t.Fatalf("ADD after a pod went: %v", err)
	}
	if over.ipOf(tables.IPv4) != pods[3].ipOf(tables.IPv4) {
		t.Logf("reused %s (the freed address was %s)", over.ipOf(tables.IPv4), pods[3].ipOf(tables.IPv4))
	}
	pods[3] = over

	// Another node: it waits, the pool says so, and gets a CIDR once node1
	// released one (its pods gone, the CIDR empty for a while).
	other := newPod(t, n2, ns, "other", nil)
	done := make(chan error, 1)
	go func() {
		// The first ADDs are refused (CIDRs are released only after they
		// stay empty for a while); the runtime tries again after a pause,
		// as kubelet does (with a longer one).
		for {
			err := other.add(ctx)
			if err == nil || !errors.As(err, &cniErr) || cniErr.Code != ipamv1.CodePoolExhausted {
				done <- err
				return
			}
			_ = n2.rt.Del(ctx, other.Pod)
			time.Sleep(time.Second)
		}
	}()
	for _, p := range pods[5:] {
		p.stop(t)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ADD on node2 after node1's pods went: %v", err)
		}
	case <-ctx.Done():
		t.Fatalf("node2 never got an address of pool tiny: %v", ctx.Err())
	}
	if !mustPrefix("198.18.112.0/28").Contains(other.ipOf(tables.IPv4)) {
		t.Fatalf("node2's pod got %s", other.ipOf(tables.IPv4))
	}
	waitPoolCondition(t, "tiny", tables.ConditionPodPoolExhausted, metav1.ConditionFalse, "")
	waitOperatorError(t, n1.name, func(msg string) bool { return msg == "" })
	waitOperatorError(t, n2.name, func(msg string) bool { return msg == "" })
	other.stop(t)
	for _, p := range pods[:5] {
		p.stop(t)
	}
}

// TestDelWhileAgentDown: the runtime's DEL succeeds while the agent is
// down (the plugin queues it); the restarted agent replays it.
func TestDelWhileAgentDown(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[1]
	ns := namespace(t, "deldown", nil)
	p := startPod(t, n, ns, "p", nil)
	ip := p.ipOf(tables.IPv4)
	if err := n.agent.Kill9(); err != nil {
		t.Fatal(err)
	}
	p.stop(t) // DEL must succeed with no agent
	queued, _ := filepath.Glob(filepath.Join(n.stateDir, ipamv1.PendingDelDir, "*.json"))
	if len(queued) == 0 {
		t.Fatal("no DEL was queued while the agent was down")
	}
	if err := n.agent.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, timeout, func() (bool, string) {
		rows, err := n.allocations()
		if err != nil {
			return false, err.Error()
		}
		for _, r := range rows {
			if r.IP == ip {
				return false, fmt.Sprintf("%s is still allocated after the agent came back", ip)
			}
		}
		left, _ := filepath.Glob(filepath.Join(n.stateDir, ipamv1.PendingDelDir, "*.json"))
		return len(left) == 0, fmt.Sprintf("queued DELs left: %v", left)
	})
}

// TestKillDuringBurst: 200 pods or more come and go on one node while its agent is
// killed with SIGKILL at least ten times: whenever an ADD succeeds its
// addresses are the pod's alone; at the end, after the runtime's garbage
// collection, the node holds exactly the addresses of the pods that exist.
func TestKillDuringBurst(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[2]
	ns := namespace(t, "burst", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	stopKills := make(chan struct{})
	var kills atomic.Int32
	killsDone := make(chan struct{})
	go func() {
		rng := rand.New(rand.NewSource(7))
		for {
			select {
			case <-stopKills:
				close(killsDone)
				return
			case <-time.After(time.Duration(500+rng.Intn(2000)) * time.Millisecond):
			}
			_ = n.agent.Kill9()
			kills.Add(1)
			time.Sleep(time.Duration(100+rng.Intn(300)) * time.Millisecond)
			if err := n.agent.Start(); err != nil {
				t.Error(err)
			}
		}
	}()

	var (
		mu    sync.Mutex
		alive = map[string]*pod{} // ADD succeeded, DEL not yet
		owner = map[netip.Addr]string{}
		adds  int
		fails int
	)
	check := func(p *pod) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range p.IPs() {
			if o, dup := owner[a]; dup {
				t.Errorf("%s given to %s while %s has it", a, p.Name, o)
			}
			owner[a] = p.Name
		}
		alive[p.Name] = p
	}
	release := func(p *pod) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range p.IPs() {
			delete(owner, a)
		}
		delete(alive, p.Name)
	}
	var wg sync.WaitGroup
	names := make(chan int)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range names {
				p := newPod(t, n, ns, fmt.Sprintf("b%d", i), nil)
				// As kubelet: an ADD that fails is cleaned up with a DEL
				// and tried again with a new sandbox, after a pause (the
				// agent may be down for a while).
				giveUp := time.Now().Add(3 * time.Minute)
				for {
					actx, acancel := context.WithTimeout(ctx, 70*time.Second)
					err := p.add(actx)
					acancel()
					mu.Lock()
					if err == nil {
						adds++
					} else {
						fails++
					}
					mu.Unlock()
					if err == nil {
						break
					}
					_ = n.rt.Del(ctx, p.Pod)
					if time.Now().After(giveUp) {
						t.Errorf("pod %s never got an address: %v", p.Name, err)
						break
					}
					time.Sleep(250 * time.Millisecond)
					p.ContainerID += "-retry"
				}
				if p.result == nil {
					continue
				}
				check(p)
				if i%2 == 0 { // half of the pods go again
					release(p)
					if err := n.rt.Del(ctx, p.Pod); err != nil {
						t.Errorf("DEL of %s: %v", p.Name, err)
					}
					_ = p.netns.Delete()
				}
			}
		}()
	}
	// At least 200 pods, and on until the agent was killed ten times.
	for i := 0; i < 200 || (kills.Load() < 10 && i < 2000); i++ {
		names <- i
	}
	close(names)
	wg.Wait()
	close(stopKills)
	<-killsDone
	t.Logf("%d ADDs succeeded, %d failed (agent down or killed mid-way), %d SIGKILLs, %d pods alive", adds, fails, kills.Load(), len(alive))
	if !n.agent.Running() {
		if err := n.agent.Start(); err != nil {
			t.Fatal(err)
		}
	}

	// The runtime's garbage collection: every attachment it does not know
	// goes (herald-ipam's GC through the plugin, as a main plugin with GC
	// support passes it on).
	var valid []cnitypes.GCAttachment
	for _, p := range alive {
		valid = append(valid, p.Attachment())
	}
	waitFor(t, timeout, func() (bool, string) {
		if err := n.rt.DelegateGC(ctx, valid...); err != nil {
			return false, fmt.Sprintf("GC: %v", err)
		}
		rows, err := n.allocations()
		if err != nil {
			return false, err.Error()
		}
		want := map[netip.Addr]string{}
		for a, o := range owner {
			want[a] = o
		}
		var extra, wrong []string
		for _, r := range rows {
			o, ok := want[r.IP]
			switch {
			case !ok:
				extra = append(extra, r.IP.String()+" ("+r.PodName+")")
			case o != r.PodName:
				wrong = append(wrong, fmt.Sprintf("%s: %s, not %s", r.IP, r.PodName, o))
			}
			delete(want, r.IP)
		}
		missing := len(want)
		return len(extra) == 0 && len(wrong) == 0 && missing == 0,
			fmt.Sprintf("allocations: %d leaked %v, %d with the wrong owner %v, %d missing", len(extra), extra, len(wrong), wrong, missing)
	})
	journal, _ := os.ReadDir(filepath.Join(n.stateDir, "allocations"))
	if len(journal) != len(owner) {
		t.Errorf("journal holds %d addresses, %d pods hold %d", len(journal), len(alive), len(owner))
	}
	for _, p := range alive {
		p.stop(t)
	}
}

// TestPoolEditsWithLeaderRestart: a pool's CIDR is removed while a node
// holds part of it, added back, and the pool deleted while in use, with the
// pod CIDR allocator's leader killed in between. A watch checks every
// CiliumNode change: no CIDR is ever on two nodes.
func TestPoolEditsWithLeaderRestart(t *testing.T) {
	logAgentsOnFailure(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := ipamwatch.Start(ctx, herald)
	if err != nil {
		t.Fatal(err)
	}
	createPool(t, "edit", []string{"198.18.96.0/24", "198.18.97.0/24"}, 26)
	ns := namespace(t, "edit", v4pool("edit"))
	a := startPod(t, nodes[0], ns, "a", nil)
	first := a.ipOf(tables.IPv4)
	if !mustPrefix("198.18.96.0/24").Contains(first) {
		t.Fatalf("first pod got %s, want 198.18.96.0/24 (the first CIDR)", first)
	}

	// The CIDR node1 holds part of leaves the pool: node1 keeps it.
	setPoolCIDRs(t, "edit", "198.18.97.0/24")
	waitPoolCondition(t, "edit", tables.ConditionPodPoolRemovedInUse, metav1.ConditionTrue, "(node node1)")
	b := startPod(t, nodes[1], ns, "b", nil)
	if !mustPrefix("198.18.97.0/24").Contains(b.ipOf(tables.IPv4)) {
		t.Fatalf("node2's pod got %s, want the remaining CIDR 198.18.97.0/24", b.ipOf(tables.IPv4))
	}

	killLeader(t, tables.PodIPAMLease)

	// Added back: node1's part still is node1's alone.
	setPoolCIDRs(t, "edit", "198.18.97.0/24", "198.18.96.0/24")
	var more []*pod
	for i := 0; i < 6; i++ {
		more = append(more, startPod(t, nodes[2], ns, fmt.Sprintf("c%d", i), nil))
	}
	holder := nodeCIDRHolding(t, first)
	if holder != "node1" {
		t.Fatalf("%s is now in a CIDR of %s", first, holder)
	}

	killLeader(t, tables.PodIPAMLease)

	// Deleted while in use: it stays, terminating, until the nodes let go.
	if err := herald.CiliumV2alpha1().CiliumPodIPPools().Delete(ctx, "edit", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPoolCondition(t, "edit", tables.ConditionPodPoolTerminating, metav1.ConditionTrue, "node1")
	a.stop(t)
	b.stop(t)
	for _, p := range more {
		p.stop(t)
	}
	waitFor(t, timeout, func() (bool, string) {
		_, err := herald.CiliumV2alpha1().CiliumPodIPPools().Get(ctx, "edit", metav1.GetOptions{})
		return err != nil, fmt.Sprintf("pool edit still exists after its pods went (%v); CIDRs: %v", err, w.Allocated())
	})
	if vs := w.Violations(); len(vs) > 0 {
		t.Fatalf("CIDRs on two nodes:\n%s", strings.Join(vs, "\n"))
	}
	t.Log(w.Summary())
}

// killLeader kills the agent holding the Lease and starts it again.
func killLeader(t *testing.T, lease string) {
	t.Helper()
	leader := leaderOf(t, lease)
	t.Logf("killing %s, the holder of %s", leader.name, lease)
	if err := leader.agent.Kill9(); err != nil {
		t.Fatal(err)
	}
	if err := leader.agent.Start(); err != nil {
		t.Fatal(err)
	}
	// The test's next ADD may be on that node: until the new agent serves
	// the plugin, the ADD fails with "try again later" (a runtime retries;
	// the test does not).
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := leader.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
}

// leaderOf returns the node whose running agent holds the Lease.
func leaderOf(t *testing.T, lease string) *node {
	t.Helper()
	var leader *node
	waitFor(t, timeout, func() (bool, string) {
		l, err := kube.CoordinationV1().Leases(leaseNS).Get(context.Background(), lease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false, fmt.Sprintf("Lease %s: %v", lease, err)
		}
		name, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
		for _, n := range nodes {
			if n.name == name && n.agent.Running() {
				leader = n
				return true, ""
			}
		}
		return false, "no running agent holds " + lease
	})
	return leader
}

// waitMetrics waits until the node's agent exports exactly these values,
// each written as name{label="value",...}.
func waitMetrics(t *testing.T, n *node, want map[string]float64) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		m, err := n.agent.Metrics()
		if err != nil {
			return false, err.Error()
		}
		for series, v := range want {
			name, labels := parseSeries(series)
			got, ok := m.Value(name, labels)
			if !ok || got != v {
				return false, fmt.Sprintf("%s on %s = %v (present %v), want %v", series, n.name, got, ok, v)
			}
		}
		return true, ""
	})
}

// parseSeries splits name{a="x",b="y"}.
func parseSeries(s string) (string, map[string]string) {
	name, rest, ok := strings.Cut(s, "{")
	if !ok {
		return s, nil
	}
	labels := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		labels[k] = strings.Trim(v, `"`)
	}
	return name, labels
}

// nodeCIDRHolding returns the node whose CiliumNode lists a CIDR with a.
func nodeCIDRHolding(t *testing.T, a netip.Addr) string {
	t.Helper()
	list, err := herald.CiliumV2().CiliumNodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list.Items {
		for _, al := range n.Spec.IPAM.Pools.Allocated {
			for _, c := range al.CIDRs {
				if mustPrefix(string(c)).Contains(a) {
					return n.Name
				}
			}
		}
	}
	return ""
}
