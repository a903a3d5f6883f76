package multipool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	cnitypes "github.com/containernetworking/cni/pkg/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
)

// TestCheck: the runtime's CHECK through bridge passes while the agent
// holds the pod's addresses, and fails once the agent no longer does (its
// DEL came to herald-ipam alone, the pod's interface still there).
func TestCheck(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[0]
	ns := namespace(t, "check", nil)
	p := startPod(t, n, ns, "c", nil)
	defer p.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.rt.Check(ctx, p.Pod); err != nil {
		t.Fatalf("CHECK of a pod the agent holds: %v", err)
	}
	if err := n.rt.DelegateDel(ctx, p.Pod); err != nil {
		t.Fatalf("herald-ipam DEL: %v", err)
	}
	err := n.rt.Check(ctx, p.Pod)
	if err == nil || !strings.Contains(err.Error(), "holds []") {
		t.Fatalf("CHECK after the agent released the pod's addresses: %v, want an error saying it holds none", err)
	}
}

// TestDelAfterNetnsGone: DEL through bridge succeeds when the pod's network
// namespace is gone already (the runtime removed it first), the agent
// releases the addresses at once (nothing queued), and a second DEL
// succeeds too.
func TestDelAfterNetnsGone(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[1]
	ns := namespace(t, "delgone", nil)
	p := startPod(t, n, ns, "g", nil)
	ips := p.IPs()
	if err := p.netns.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Netns); err == nil {
		t.Fatalf("network namespace %s still there", p.Netns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.rt.Del(ctx, p.Pod); err != nil {
		t.Fatalf("DEL with the network namespace gone: %v", err)
	}
	rows, err := n.allocations()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if slices.Contains(ips, r.IP) {
			t.Fatalf("%s still allocated to %s/%s after DEL", r.IP, r.PodNS, r.PodName)
		}
	}
	queued, _ := filepath.Glob(filepath.Join(n.stateDir, ipamv1.PendingDelDir, "*.json"))
	if len(queued) > 0 {
		t.Fatalf("DELs queued although the agent answered: %v", queued)
	}
	p.stop(t) // DEL again, and the Pod object goes
}

// TestStatusNotReadyWithoutDefaultCIDR: the runtime's STATUS through bridge
// says "not ready" (CNI error 50, with the agent's reason) while the
// node's agent holds no CIDR of the default pool, and passes once it got
// one. The node is an extra agent (node9, sharing node3's network
// namespace, without node routes) whose answers about CiliumNodes the test
// drops until it lets them through: until then it cannot ask for a CIDR.
func TestStatusNotReadyWithoutDefaultCIDR(t *testing.T) {
	logAgentsOnFailure(t)
	const name = "node9"
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// A Node without addresses: the allocator keeps its CiliumNode, and
	// the other agents route nothing to it.
	if _, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		err := herald.CiliumV2().CiliumNodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}()

	var blocked atomic.Bool
	blocked.Store(true)
	host := lan.Host(nodes[2].name)
	dir := filepath.Join(work, name)
	proxy, err := testCluster.StartProxy(lan.RootIP().String(), filepath.Join(dir, "proxy"), func(resp *http.Response) error {
		if res, _, _ := resourceOf(resp.Request.URL.Path); res == "ciliumnodes" && blocked.Load() {
			return errors.New("the test holds CiliumNodes back")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	n := &node{name: nodes[2].name, dir: dir}
	n.socket = filepath.Join(dir, "ipam.sock")
	n.stateDir = filepath.Join(dir, "state")
	n.agent = agentproc.New(agentproc.Options{
		Name: name, Netns: host.Netns, Dir: dir, AgentBin: nodes[2].agent.AgentBin, DbgBin: nodes[2].agent.DbgBin,
		Kubeconfig: proxy.Kubeconfig, Namespace: leaseNS,
		HealthAddr: host.IP.String() + ":9975", MetricsAddr: host.IP.String() + ":9976",
		Args: []string{"--ipam=multi-pool", "--enable-ipv6", "--ipam-socket=" + n.socket, "--ipam-state-dir=" + n.stateDir},
	})
	if err := n.agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Log(n.agent.Logs(100))
		}
		if err := n.agent.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if n.rt, err = n.runtime(n.socket, "cni-cache"); err != nil {
		t.Fatal(err)
	}

	// Not ready: the agent answers (it serves the plugin) but has no CIDR.
	var cniErr *cnitypes.Error
	waitFor(t, timeout, func() (bool, string) {
		err := n.rt.Status(ctx)
		if errors.As(err, &cniErr) && cniErr.Code == 50 && strings.Contains(cniErr.Msg, `CIDR of the pool "default" yet`) {
			return true, ""
		}
		return false, fmt.Sprintf("STATUS = %v, want CNI error 50 saying the node has no CIDR of the default pool yet", err)
	})
	if _, err := herald.CiliumV2().CiliumNodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("CiliumNode %s exists (%v): the agent asked for CIDRs through the block", name, err)
	}

	// Let the CiliumNodes through: the agent asks, gets a CIDR of the
	// default pool in each family, and STATUS passes.
	blocked.Store(false)
	if err := n.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	cn, err := herald.CiliumV2().CiliumNodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range cn.Spec.IPAM.Pools.Allocated {
		if a.Pool == tables.DefaultPodIPPool {
			for _, c := range a.CIDRs {
				got = append(got, string(c))
			}
		}
	}
	if len(got) < 2 {
		t.Fatalf("STATUS passed, but CiliumNode %s lists default CIDRs %v, want one per family", name, got)
	}
}
