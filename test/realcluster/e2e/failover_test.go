package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/test/suite"
)

// failoverTrials is how many times each fault is repeated:
// HERALD_REALCLUSTER_TRIALS (the benchmark runs 20), 2 by default.
func failoverTrials(t testing.TB) int { return suite.EnvInt(t, "HERALD_REALCLUSTER_TRIALS", 2) }

// testL2Failover: the node that answers for a Service's IP loses its
// agent, by `kubectl delete pod` and by kill -9 of the agent's process in
// its container, and no request is ever answered by two MACs. After each
// fault the IP is answered again (by another node, or by the same node's
// agent once the kubelet restarted it, whichever comes first): the longest
// time it went unanswered is logged (make bench-realcluster records it).
func testL2Failover(t *testing.T) { l2Failover(t) }

// l2Failover is testL2Failover for the test and the benchmark: the longest
// time without an answer after each fault, by fault.
func l2Failover(t testing.TB) map[string][]time.Duration {
	ns := newNamespace(t, "failover", nil)
	deployBackend(t, ns, "fo", 3, nil)
	_, vip := loadBalancer(t, ns, "fo", nil)
	waitCurl(t, vip)
	w := watchVIPs(t, vip)
	c := client(t)
	gaps := map[string][]time.Duration{}
	for _, fault := range []struct {
		name string
		do   func(t testing.TB, node string)
	}{
		{"kubectl delete pod", deleteAgentPod},
		{"kill -9", killAgent},
	} {
		for i := 0; i < failoverTrials(t); i++ {
			owner := ownerOf(t, vip)
			readyAgents(t)
			before := agentPods(t)[owner]
			mark, start := c.Mark(), time.Now()
			fault.do(t, owner)
			// Settled once the node's agent is back (a new Pod, or its
			// container restarted) and Ready, and a second has passed.
			waitFor(t, 2*timeout, func() (bool, string) {
				p, ok := agentPods(t)[owner]
				back := ok && podReady(&p) && (p.UID != before.UID || restarts(p) > restarts(before))
				return back, fmt.Sprintf("the agent on %s is not back yet", owner)
			})
			time.Sleep(time.Second)
			frames, err := c.Since(mark)
			if err != nil {
				t.Fatal(err)
			}
			// The capture ends here: a VIP still unanswered counts until
			// now, not until the frames are judged.
			readAt := time.Now()
			gap, last, by := time.Duration(0), start, []string{}
			for _, f := range frames {
				if !c.IsReply(f, vip) || f.At.Before(start) {
					continue
				}
				gap, last = max(gap, f.At.Sub(last)), f.At
				if n := nodeByMAC(t, f.SHA.String()); len(by) == 0 || by[len(by)-1] != n {
					by = append(by, n)
				}
			}
			gap = max(gap, readAt.Sub(last))
			gaps[fault.name] = append(gaps[fault.name], gap)
			t.Logf("%s of %s's agent: %s unanswered for at most %s, answered then by %v", fault.name, owner, vip, ms(gap), by)
			if fault.name == "kill -9" {
				// A fresh Pod, so that the kubelet's crash-loop back-off
				// does not grow with the trials.
				deleteAgentPod(t, owner)
				readyAgents(t)
			}
		}
	}
	rep := w.stop(t)[vip]
	t.Logf("VIP %s over the whole run: %s", vip, rep)
	for name, ds := range gaps {
		t.Logf("longest time unanswered after %s: %d trials, p50 %s, p99 %s, max %s", name, len(ds),
			ms(percentile(ds, 50)), ms(percentile(ds, 99)), ms(percentile(ds, 100)))
	}
	waitCurl(t, vip)
	return gaps
}

func restarts(p corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// deleteAgentPod deletes the agent Pod of a node, as an operator would.
func deleteAgentPod(t testing.TB, node string) {
	t.Helper()
	p, ok := agentPods(t)[node]
	if !ok {
		t.Fatalf("no agent Pod on %s", node)
	}
	if err := cl.Client.CoreV1().Pods(heraldNS).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// killAgent kills the agent process in its container with SIGKILL (the
// kubelet then restarts the container).
func killAgent(t testing.TB, node string) {
	t.Helper()
	pids := cl.Node(node).Processes("herald-agent")
	if len(pids) != 1 {
		t.Fatalf("%d herald-agent processes on %s: %v", len(pids), node, pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// waitOtherOwner waits until a node other than old answers who-has vip
// and returns how long after start.
func waitOtherOwner(t testing.TB, vip netip.Addr, old string, start time.Time) time.Duration {
	t.Helper()
	c := client(t)
	mark := c.Mark()
	deadline := start.Add(timeout)
	for time.Now().Before(deadline) {
		frames, err := c.Since(mark)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			if c.IsReply(f, vip) {
				if n := nodeByMAC(t, f.SHA.String()); n != "" && n != old {
					return f.At.Sub(start)
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no node but %s answered %s within %s", old, vip, timeout)
	return 0
}

// readyAgents waits until every node runs a Ready agent.
func readyAgents(t testing.TB) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		pods := agentPods(t)
		for _, n := range cl.Nodes {
			p, ok := pods[n.Name]
			if !ok || !podReady(&p) {
				return false, fmt.Sprintf("no Ready agent on %s", n.Name)
			}
		}
		return true, ""
	})
}

// testNotReadyNodeKeepsAnnouncing: the kubelet and the container runtime
// of the node that answers for a Service's IP stop. The node goes
// NotReady, but its agent runs on under its container's shim, alive to its
// peers: it keeps answering (Documentation/l2-announcements.md says why),
// and curl through the IP works on. Both start again and the node is
// Ready.
func testNotReadyNodeKeepsAnnouncing(t *testing.T) {
	ns := newNamespace(t, "notready", nil)
	deployBackend(t, ns, "nr", 3, nil)
	_, vip := loadBalancer(t, ns, "nr", nil)
	waitCurl(t, vip)
	owner := ownerOf(t, vip)
	n := cl.Node(owner)
	w := watchVIPs(t, vip)
	ctx := context.Background()
	for _, d := range []string{"kubelet", "containerd"} {
		if err := n.Stop(d); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, timeout, func() (bool, string) {
		node, err := cl.Client.CoreV1().Nodes().Get(ctx, owner, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status != corev1.ConditionTrue, fmt.Sprintf("%s is %s: %s", owner, c.Status, c.Message)
			}
		}
		return false, "no Ready condition"
	})
	t.Logf("%s is NotReady; its agent runs on: %v", owner, n.Processes("herald-agent"))
	if got := ownerOf(t, vip); got != owner {
		t.Fatalf("%s moved from the NotReady %s to %s", vip, owner, got)
	}
	if _, err := curlVIP(vip); err != nil {
		t.Fatalf("curl through %s while %s is NotReady: %v", vip, owner, err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitNodesReady(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	rep := w.stop(t)[vip]
	if len(rep.Owners) != 1 {
		t.Fatalf("%s changed hands while %s was NotReady: %s", vip, owner, rep)
	}
	t.Logf("%s: %s", vip, rep)
}

func ctxTimeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}
