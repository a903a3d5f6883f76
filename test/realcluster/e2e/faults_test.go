package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/ipamwatch"
)

// churner scales a Deployment of the backend up and down until stopped:
// pods come and go on every node.
type churner struct {
	ns    string
	stopc chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	err   error
	turns int
}

func startChurn(t *testing.T, ns string, high int) *churner {
	deployBackend(t, ns, "churn", 0, nil)
	c := &churner{ns: ns, stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for n := 0; ; n++ {
			replicas := high
			if n%2 == 1 {
				replicas = 0
			}
			patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
			if _, err := cl.Client.AppsV1().Deployments(ns).Patch(context.Background(), "churn", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				c.mu.Lock()
				c.err = err
				c.mu.Unlock()
			}
			c.mu.Lock()
			c.turns++
			c.mu.Unlock()
			select {
			case <-c.stopc:
				return
			case <-time.After(4 * time.Second):
			}
		}
	}()
	return c
}

// stop ends the churn with no pod left.
func (c *churner) stop(t *testing.T) int {
	t.Helper()
	close(c.stopc)
	<-c.done
	if c.err != nil {
		t.Fatalf("churn: %v", c.err)
	}
	patch := `{"spec":{"replicas":0}}`
	if _, err := cl.Client.AppsV1().Deployments(c.ns).Patch(context.Background(), "churn", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, timeout, func() (bool, string) {
		list, err := cl.Client.CoreV1().Pods(c.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=churn"})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d churn pods left", len(list.Items))
	})
	return c.turns
}

// expectCleanIPAM waits until every node's agent finds no leaked and no
// duplicate address (a DEL after a runtime restart can take a while).
func expectCleanIPAM(t *testing.T) {
	t.Helper()
	for _, n := range cl.Nodes {
		waitFor(t, timeout, func() (bool, string) {
			rep := ipamCheck(t, n.Name)
			return rep.Errors == 0, fmt.Sprintf("herald-dbg ipam check on %s: %d errors: %+v", n.Name, rep.Errors, rep.Findings)
		})
	}
}

// testKubeletAndRuntimeRestart: pods come and go on every node while the
// kubelet and containerd of two nodes are stopped and started again: no
// address leaks or is handed out twice, the pods that ran keep theirs,
// and every Service keeps its IP, answered throughout by one MAC at a
// time.
func testKubeletAndRuntimeRestart(t *testing.T) {
	f := newLifecycleFixture(t)
	w := watchVIPs(t, f.vipList()...)
	churn := startChurn(t, newNamespace(t, "churn", nil), 30)
	ctx := context.Background()
	for _, n := range cl.Nodes[1:] {
		for _, d := range []string{"kubelet", "containerd"} {
			if err := n.Stop(d); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * time.Second)
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("restarted the kubelet and containerd of %s", n.Name)
	}
	if err := cl.WaitNodesReady(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	turns := churn.stop(t)
	t.Logf("%d scalings of the churn Deployment", turns)
	for _, r := range w.stop(t) {
		t.Logf("%s", r)
	}
	f.check(t, "kubelet and containerd restarts")
	expectCleanIPAM(t)
}

// testNodeDeletedAndBack: a Node is deleted while its kubelet and agent
// run. Kubernetes deletes its pods and its CiliumNode; its agent, still
// running, lists again the CIDRs its pods use; no CIDR is ever on two
// nodes, and pods created elsewhere meanwhile get addresses of their own.
// The kubelet, restarted, registers the Node again: it gets an agent and
// pods as before.
func testNodeDeletedAndBack(t *testing.T) {
	herald, err := versioned.NewForConfig(cl.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	watch, err := ipamwatch.Start(wctx, herald)
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, "nodedel", nil)
	pods := deployBackend(t, ns, "nd", 3, nil)
	n := cl.Nodes[len(cl.Nodes)-1]
	ctx := context.Background()
	podsOnIt := 0
	for _, p := range pods {
		if p.Spec.NodeName == n.Name {
			podsOnIt++
		}
	}
	agent, ok := agentPods(t)[n.Name]
	if !ok {
		t.Fatalf("no agent Pod on %s", n.Name)
	}
	oldLog := followAgentLog(t, agent.Name)
	if err := cl.Client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The CiliumNode goes with its Node; the agent, still running, says
	// it writes it again (multi-pool.md, "When a Node is deleted"), with
	// the CIDRs its pods use when it has any.
	created := []string{"Created the CiliumNode"}
	if podsOnIt > 0 {
		created = []string{"Created the CiliumNode again, listing the CIDRs the node's pods still use"}
	}
	t.Logf("agent of the deleted Node %s (%d pods of the test on it): %s", n.Name, podsOnIt,
		oldLog.waitFor(t, "agent of the deleted Node "+n.Name, created...))
	// Kubernetes deletes the Node's pods (its agent's too) once the pod
	// garbage collector's quarantine is over.
	waitFor(t, timeout, func() (bool, string) {
		pods, err := cl.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods still bound to the deleted Node %s", len(pods.Items), n.Name)
	})
	// Meanwhile the other nodes take pods of their own.
	others := deployBackend(t, ns, "elsewhere", 4, nil)
	for _, p := range others {
		if p.Spec.NodeName == n.Name {
			t.Fatalf("pod %s went to the deleted Node", p.Name)
		}
	}
	// Given back. What the old agent logged before is no answer to
	// what happens now.
	before := len(oldLog.String())
	if err := n.Stop("kubelet"); err != nil {
		t.Fatal(err)
	}
	if err := n.StartKubelet(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitNodesReady(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	readyAgents(t)
	waitFor(t, timeout, func() (bool, string) {
		var owners []metav1.OwnerReference
		cn, err := herald.CiliumV2().CiliumNodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err == nil {
			owners = cn.OwnerReferences
		}
		node, nerr := cl.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		return err == nil && nerr == nil && len(owners) == 1 && owners[0].UID == node.UID,
			fmt.Sprintf("CiliumNode %s: %v, owners %+v", n.Name, err, owners)
	})
	// An agent says how the CiliumNode became the new Node's: it took
	// over the one the old agent wrote, or created it when the allocator
	// had deleted that one meanwhile (a minute after the Node). Usually
	// the new agent; the old one if it still ran when the Node came back.
	newAgent := agentPods(t)[n.Name]
	line := lineWith(oldLog.String()[before:]+"\n"+agentLogNow(t, newAgent.Name), "The CiliumNode belongs to its Node again", "Created the CiliumNode")
	if line == "" {
		t.Fatalf("agents of the Node given back (%s, %s): no log line says what became of its CiliumNode", agent.Name, newAgent.Name)
	}
	t.Logf("agent of the Node given back: %s", line)
	back := deployBackend(t, ns, "back", 3, nil)
	onIt := 0
	for _, p := range back {
		if p.Spec.NodeName == n.Name {
			onIt++
		}
	}
	if onIt == 0 {
		t.Logf("no pod of the last Deployment went to %s (the scheduler's choice)", n.Name)
	}
	if vs := watch.Violations(); len(vs) > 0 {
		t.Fatalf("CIDRs on two nodes:\n%s", strings.Join(vs, "\n"))
	}
	t.Log(watch.Summary())
	expectCleanIPAM(t)
}

// testFrozenAgent: the agent of the node that answers for a Service's IP
// is frozen (SIGSTOP). Another node answers within its failover time, the
// frozen one never does meanwhile (its responder fences itself), and the
// kubelet, whose probes fail, restarts the container: the agent is back
// and Ready, with an Event saying why.
func testFrozenAgent(t *testing.T) {
	ns := newNamespace(t, "frozen", nil)
	deployBackend(t, ns, "fz", 3, nil)
	_, vip := loadBalancer(t, ns, "fz", nil)
	waitCurl(t, vip)
	owner := ownerOf(t, vip)
	before := agentPods(t)[owner]
	restarts := before.Status.ContainerStatuses[0].RestartCount
	w := watchVIPs(t, vip)
	pids := cl.Node(owner).Processes("herald-agent")
	if len(pids) != 1 {
		t.Fatalf("herald-agent processes on %s: %v", owner, pids)
	}
	start := time.Now()
	if err := syscall.Kill(pids[0], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	took := waitOtherOwner(t, vip, owner, start)
	t.Logf("agent of %s frozen: another node answered %s after %s", owner, vip, took.Round(time.Millisecond))
	waitCurl(t, vip)
	// The kubelet restarts it.
	waitFor(t, 2*timeout, func() (bool, string) {
		p, ok := agentPods(t)[owner]
		if !ok || len(p.Status.ContainerStatuses) == 0 {
			return false, "no agent Pod on " + owner
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount > restarts && podReady(&p), fmt.Sprintf("agent on %s: %d restarts, ready %v", owner, cs.RestartCount, podReady(&p))
	})
	rep := w.stop(t)[vip]
	t.Logf("%s", rep)
	evs, err := cl.Client.CoreV1().Events(heraldNS).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + before.Name})
	if err != nil {
		t.Fatal(err)
	}
	// The kubelet says why: the liveness probe (/livez) failed, and the
	// container is restarted for it.
	var why []string
	unhealthy, killed := false, false
	for _, e := range evs.Items {
		why = append(why, e.Type+" "+e.Reason+": "+e.Message)
		unhealthy = unhealthy || (e.Type == corev1.EventTypeWarning && e.Reason == "Unhealthy" && strings.HasPrefix(e.Message, "Liveness probe failed:"))
		killed = killed || (e.Reason == "Killing" && strings.Contains(e.Message, "failed liveness probe, will be restarted"))
	}
	if !unhealthy || !killed {
		t.Fatalf("Events on %s while its agent was frozen: want Warning Unhealthy \"Liveness probe failed: ...\" and Killing \"... failed liveness probe, will be restarted\", got:\n%s",
			before.Name, strings.Join(why, "\n"))
	}
	t.Logf("Events on %s: %s", before.Name, strings.Join(why, " | "))
}
