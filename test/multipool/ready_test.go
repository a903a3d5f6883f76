package multipool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	cnitypes "github.com/containernetworking/cni/pkg/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
)

// extraNode is the name of a node a test runs an agent for on its own: it
// shares node3's network namespace, has no Node addresses (the other
// agents route nothing to it, and it routes nothing) and goes at the end.
const extraNode = "node9"

// startExtraNode starts an agent for extraNode with more flags, talking to
// the API server through a proxy that passes each answer to hook (nil:
// directly). Its Node, CiliumNode and agent go when the test ends.
func startExtraNode(t *testing.T, args []string, hook func(*http.Response) error) *node {
	t.Helper()
	ctx := context.Background()
	// A Node without addresses: the allocator keeps its CiliumNode, and
	// the other agents route nothing to it.
	if _, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: extraNode}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Nodes().Delete(context.Background(), extraNode, metav1.DeleteOptions{})
		err := herald.CiliumV2().CiliumNodes().Delete(context.Background(), extraNode, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	host := lan.Host(nodes[2].name)
	dir := filepath.Join(work, extraNode)
	kubeconfig := testCluster.Kubeconfig
	if hook != nil {
		proxy, err := testCluster.StartProxy(lan.RootIP().String(), filepath.Join(dir, "proxy"), hook)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(proxy.Close)
		kubeconfig = proxy.Kubeconfig
	}
	n := &node{name: nodes[2].name, dir: dir}
	n.socket = filepath.Join(dir, "ipam.sock")
	n.stateDir = filepath.Join(dir, "state")
	n.agent = agentproc.New(agentproc.Options{
		Name: extraNode, Netns: host.Netns, Dir: dir, AgentBin: nodes[2].agent.AgentBin, DbgBin: nodes[2].agent.DbgBin,
		Kubeconfig: kubeconfig, Namespace: leaseNS,
		HealthAddr: host.IP.String() + ":9975", MetricsAddr: host.IP.String() + ":9976",
		Args: append([]string{"--ipam=multi-pool", "--enable-ipv6", "--ipam-socket=" + n.socket, "--ipam-state-dir=" + n.stateDir}, args...),
	})
	if err := n.agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(n.agent.Logs(100))
		}
		if err := n.agent.Stop(); err != nil {
			t.Error(err)
		}
	})
	var err error
	if n.rt, err = n.runtime(n.socket, "cni-cache"); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitNotReady waits until the node's STATUS fails with CNI error 50 and
// a message containing want.
func waitNotReady(t *testing.T, n *node, want string) {
	t.Helper()
	var cniErr *cnitypes.Error
	waitFor(t, timeout, func() (bool, string) {
		err := n.rt.Status(context.Background())
		if errors.As(err, &cniErr) && cniErr.Code == 50 && strings.Contains(cniErr.Msg, want) {
			return true, ""
		}
		return false, fmt.Sprintf("STATUS = %v, want CNI error 50 saying %q", err, want)
	})
}

// allocatedCIDRs lists the CIDRs a CiliumNode holds, by pool.
func allocatedCIDRs(t *testing.T, name string) map[string][]string {
	t.Helper()
	cn, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, a := range cn.Spec.IPAM.Pools.Allocated {
		for _, c := range a.CIDRs {
			out[a.Pool] = append(out[a.Pool], string(c))
		}
	}
	return out
}

// TestStatusNotReadyBeforeCiliumNode: the runtime's STATUS through bridge
// says "not ready" (CNI error 50, with the agent's reason) while the
// node's agent has not read its CiliumNode, and passes once it holds a
// CIDR of the pool default (pre-allocated by default, default=8) in each
// family. The test drops the agent's answers about CiliumNodes until it
// lets them through: until then it cannot ask for a CIDR.
func TestStatusNotReadyBeforeCiliumNode(t *testing.T) {
	logAgentsOnFailure(t)
	var blocked atomic.Bool
	blocked.Store(true)
	n := startExtraNode(t, nil, func(resp *http.Response) error {
		if res, _, _ := resourceOf(resp.Request.URL.Path); res == "ciliumnodes" && blocked.Load() {
			return errors.New("the test holds CiliumNodes back")
		}
		return nil
	})

	// Not ready: the agent answers (it serves the plugin) but knows no CIDR.
	waitNotReady(t, n, "the agent has not read this node's CiliumNode yet")
	if _, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), extraNode, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("CiliumNode %s exists (%v): the agent asked for CIDRs through the block", extraNode, err)
	}

	// Let the CiliumNodes through: the agent asks, gets a CIDR of the
	// default pool in each family, and STATUS passes.
	blocked.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if got := allocatedCIDRs(t, extraNode)[tables.DefaultPodIPPool]; len(got) < 2 {
		t.Fatalf("STATUS passed, but CiliumNode %s lists default CIDRs %v, want one per family", extraNode, got)
	}
}

// TestStatusReadyWithoutDefault: a node that pre-allocates only an
// IPv4-only pool (blue=8 on a dual-stack node) is ready with an IPv4 CIDR
// of that pool alone: it neither asks for nor waits for the pool default
// (no pod is there to use it), nor for an IPv6 CIDR blue has none of.
// Before blue exists, STATUS names it.
func TestStatusReadyWithoutDefault(t *testing.T) {
	logAgentsOnFailure(t)
	const pool = "ready-blue"
	n := startExtraNode(t, []string{"--ipam-multi-pool-pre-allocation=" + pool + "=8"}, nil)
	waitNotReady(t, n, `waiting for the CiliumPodIPPool "`+pool+`" (ipam-multi-pool-pre-allocation `+pool+`=8), which does not exist`)

	createPool(t, pool, []string{"198.18.101.0/24"}, 26)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	got := allocatedCIDRs(t, extraNode)
	if len(got) != 1 || len(got[pool]) != 1 || !strings.HasPrefix(got[pool][0], "198.18.101.") {
		t.Fatalf("ready, and CiliumNode %s holds %v; want one IPv4 CIDR of %s and nothing else", extraNode, got, pool)
	}
	cn, err := herald.CiliumV2().CiliumNodes().Get(ctx, extraNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []v2.IPAMPoolRequest{{Pool: pool, Needed: v2.IPAMPoolDemand{IPv4Addrs: 8}}}
	if got := cn.Spec.IPAM.Pools.Requested; !slices.Equal(got, want) {
		t.Fatalf("CiliumNode %s requests %+v; want %+v: 8 IPv4 addresses of %s alone", extraNode, got, want, pool)
	}
}
