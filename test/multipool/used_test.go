package multipool

import (
	"context"
	"fmt"
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// usedOf returns a node's CiliumNode status.ipam.used as "owner resource"
// by address.
func usedOf(n *node) (map[string]string, error) {
	cn, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), n.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for ip, u := range cn.Status.IPAM.Used {
		out[ip] = u.Owner + " " + u.Resource
	}
	return out, nil
}

// wantUsed is what status.ipam.used must list for these live pods of the
// default pool.
func wantUsed(pods ...*pod) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		for _, ip := range p.IPs() {
			out[ip.String()] = p.Namespace + "/" + p.Name + " default"
		}
	}
	return out
}

// TestUsedExact: a node's CiliumNode status.ipam.used lists exactly the
// addresses of its live pods (owner namespace/pod, resource the pool) after
// every step of a sequence of ADD, DEL, restarts (SIGTERM and SIGKILL),
// DELs queued while the agent was down (of the last pod, and of one of
// two), the runtime's GC and the agent's own collection, including
// every transition to the empty list: an agent that restarts holding no
// address must still clear what an earlier run listed.
func TestUsedExact(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[1]
	ns := namespace(t, "used", nil)
	ctx := context.Background()
	waitFor(t, timeout, func() (bool, string) {
		rows, err := n.allocations()
		return err == nil && len(rows) == 0, fmt.Sprintf("%s still holds addresses of earlier tests: %v %v", n.name, rows, err)
	})
	expect := func(step string, live ...*pod) {
		t.Helper()
		want := wantUsed(live...)
		waitFor(t, timeout, func() (bool, string) {
			used, err := usedOf(n)
			if err != nil {
				return false, err.Error()
			}
			return maps.Equal(used, want), fmt.Sprintf("after %s, status.ipam.used of %s is %v, want %v", step, n.name, used, want)
		})
	}
	kill9 := func() {
		t.Helper()
		if err := n.agent.Kill9(); err != nil {
			t.Fatal(err)
		}
	}
	start := func() {
		t.Helper()
		if err := n.agent.Start(); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := n.waitReady(rctx); err != nil {
			t.Fatal(err)
		}
	}

	p1 := startPod(t, n, ns, "p1", nil)
	expect("ADD p1", p1)
	p2 := startPod(t, n, ns, "p2", nil)
	expect("ADD p2", p1, p2)
	p1.stop(t)
	expect("DEL p1", p2)
	kill9()
	start()
	expect("kill -9 and start", p2)

	// The last pod goes while the agent is down: the DEL is queued and
	// replayed by an agent that then holds nothing.
	kill9()
	p2.stop(t)
	start()
	expect("a DEL of the last pod queued while the agent was down")

	p3 := startPod(t, n, ns, "p3", nil)
	expect("ADD p3", p3)
	restartAgent(t, n)
	expect("SIGTERM and start", p3)
	// The runtime's GC knows no attachment: p3's address goes.
	if err := n.rt.GC(ctx); err != nil {
		t.Fatal(err)
	}
	expect("GC")
	restartAgent(t, n)
	expect("a restart holding nothing")
	p3.stop(t)

	// A DEL queued while the agent was down, with another pod staying.
	p4 := startPod(t, n, ns, "p4", nil)
	p5 := startPod(t, n, ns, "p5", nil)
	expect("ADD p4 and p5", p4, p5)
	kill9()
	p4.stop(t)
	start()
	expect("a DEL of p4 queued while the agent was down", p5)

	// The agent's own collection (short grace for the test): a pod whose
	// DEL never comes, its Pod object gone.
	restartAgent(t, n, "--ipam-gc-grace=2s")
	defer restartAgent(t, n)
	p6 := startPod(t, n, ns, "p6", nil)
	expect("ADD p6", p5, p6)
	_ = p6.netns.Delete()
	if err := kube.CoreV1().Pods(ns).Delete(ctx, "p6", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	expect("the agent's collection of p6, whose DEL never came", p5)
	p5.stop(t)
	expect("DEL of the last pod, p5")
	p6.stop(t) // the runtime's DEL at last: nothing left to release
	expect("a late DEL of p6")
}
