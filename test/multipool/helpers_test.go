package multipool

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	current "github.com/containernetworking/cni/pkg/types/100"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cnitest"
	"github.com/heraldlb/herald/test/suite"
)

// podPrefix names the pods' network namespaces.
const podPrefix = prefix + "p-"

// The pools every test may use: dual-stack.
const (
	defaultCIDR  = "198.18.64.0/20"
	defaultCIDR6 = "fd00:64::/104"
	greenCIDR    = "198.18.80.0/20"
	greenCIDR6   = "fd00:80::/104"
)

func createDefaultPools(ctx context.Context) error {
	for name, cidrs := range map[string][2]string{tables.DefaultPodIPPool: {defaultCIDR, defaultCIDR6}, "green-pool": {greenCIDR, greenCIDR6}} {
		p := &v2alpha1.CiliumPodIPPool{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v2alpha1.IPPoolSpec{
				IPv4: &v2alpha1.IPv4PoolSpec{CIDRs: []v2alpha1.PoolCIDR{v2alpha1.PoolCIDR(cidrs[0])}, MaskSize: 24},
				IPv6: &v2alpha1.IPv6PoolSpec{CIDRs: []v2alpha1.PoolCIDR{v2alpha1.PoolCIDR(cidrs[1])}, MaskSize: 120},
			},
		}
		if _, err := herald.CiliumV2alpha1().CiliumPodIPPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pool %s: %w", name, err)
		}
	}
	return nil
}

// node is one node of the LAN: its agent and the container runtime's view
// of its pod network.
type node struct {
	name     string
	dir      string
	agent    *agentproc.Agent
	rt       *cnitest.Runtime
	socket   string
	stateDir string
}

func newNode(name, agentBin, dbgBin string) (*node, error) {
	h := lan.Host(name)
	n := &node{name: name, dir: filepath.Join(work, name)}
	n.socket = filepath.Join(n.dir, "ipam.sock")
	n.stateDir = filepath.Join(n.dir, "state")
	n.agent = agentproc.New(agentproc.Options{
		Name: name, Netns: h.Netns, Dir: n.dir, AgentBin: agentBin, DbgBin: dbgBin,
		Kubeconfig: testCluster.Kubeconfig, Namespace: leaseNS,
		HealthAddr: h.IP.String() + ":9965", MetricsAddr: h.IP.String() + ":9966",
		Args: []string{
			"--ipam=multi-pool", "--auto-direct-node-routes", "--enable-ipv6",
			"--ipam-socket=" + n.socket, "--ipam-state-dir=" + n.stateDir,
		},
	})
	if err := n.agent.Start(); err != nil {
		return nil, err
	}
	var err error
	n.rt, err = n.runtime(n.socket, "cni-cache")
	return n, err
}

// runtime is the node's container runtime whose herald-ipam talks to the
// agent at socket (the agent's own, or something in between), with its
// cache in the named directory of the node.
func (n *node) runtime(socket, cache string) (*cnitest.Runtime, error) {
	return cnitest.NodeNetwork{
		Netns: lan.Host(n.name).Netns, IPAMBin: ipamBin, Socket: socket, StateDir: n.stateDir, CacheDir: filepath.Join(n.dir, cache),
	}.Runtime()
}

// waitReady waits until the node's network answers the runtime's STATUS:
// its agent serves the plugin and holds a CIDR of the default pool in
// every family, so that ADDs succeed.
func (n *node) waitReady(ctx context.Context) error {
	for {
		err := n.rt.Status(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s never became ready for pods: %v%s", n.name, err, agentproc.UnexpectedExits(n.agent))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitFor polls cond until it holds.
func waitFor(t testing.TB, within time.Duration, cond func() (bool, string)) {
	t.Helper()
	suite.WaitFor(t, within, cond, func() string { return agentproc.UnexpectedExits(agents()...) })
}

func agents() []*agentproc.Agent {
	var out []*agentproc.Agent
	for _, n := range nodes {
		out = append(out, n.agent)
	}
	return out
}

func logAgentsOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range nodes {
				t.Log(n.agent.Logs(200))
			}
		}
	})
}

// namespace creates a namespace with the given annotations.
func namespace(t *testing.T, base string, ann map[string]string) string {
	t.Helper()
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: base + "-", Annotations: ann}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

var podSeq atomic.Int64

// pod is a Pod sandbox on a node: its object, its network namespace and
// what the runtime got for it.
type pod struct {
	cnitest.Pod
	node   *node
	netns  *cnitest.Netns
	result *current.Result
}

// IPs returns the pod's addresses.
func (p *pod) IPs() []netip.Addr {
	var out []netip.Addr
	for _, c := range p.result.IPs {
		a, _ := netip.AddrFromSlice(c.Address.IP)
		out = append(out, a.Unmap())
	}
	return out
}

// newPod creates the Pod object and its sandbox's network namespace; add
// then wires it up.
func newPod(t testing.TB, n *node, ns, name string, ann map[string]string) *pod {
	t.Helper()
	ctx := context.Background()
	obj := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec:       corev1.PodSpec{NodeName: n.name, Containers: []corev1.Container{{Name: "c", Image: "none"}}},
	}
	created, err := kube.CoreV1().Pods(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, name, err)
	}
	netns, err := cnitest.NewNetns(fmt.Sprintf("%s%d", podPrefix, podSeq.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return &pod{
		Pod: cnitest.Pod{Namespace: ns, Name: name, UID: string(created.UID),
			ContainerID: fmt.Sprintf("sandbox-%s-%d", name, podSeq.Load()), Netns: netns.Path()},
		node: n, netns: netns,
	}
}

// add runs the runtime's ADD for the pod.
func (p *pod) add(ctx context.Context) error {
	r, err := p.node.rt.Add(ctx, p.Pod)
	if err == nil {
		p.result = r
	}
	return err
}

// startPod creates a pod and wires it up; the test fails if ADD does.
func startPod(t testing.TB, n *node, ns, name string, ann map[string]string) *pod {
	t.Helper()
	p := newPod(t, n, ns, name, ann)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.add(ctx); err != nil {
		t.Fatalf("ADD of pod %s/%s on %s: %v", ns, name, n.name, err)
	}
	return p
}

// stop runs the runtime's DEL, removes the network namespace and deletes
// the Pod object.
func (p *pod) stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.node.rt.Del(ctx, p.Pod); err != nil {
		t.Errorf("DEL of pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	_ = p.netns.Delete()
	err := kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting pod %s/%s: %v", p.Namespace, p.Name, err)
	}
}

// inPrefix reports whether some address of the pod lies in cidr.
func inPrefix(ips []netip.Addr, cidr string) bool {
	pfx := netip.MustParsePrefix(cidr)
	for _, a := range ips {
		if pfx.Contains(a) {
			return true
		}
	}
	return false
}

// ipOf returns the pod's address of the family.
func (p *pod) ipOf(f tables.Family) netip.Addr {
	for _, a := range p.IPs() {
		if tables.FamilyOf(a) == f {
			return a
		}
	}
	return netip.Addr{}
}

// allocations reads a node's pod-ip-allocations table.
func (n *node) allocations() ([]*tables.PodIPAllocation, error) {
	return agentproc.Table[*tables.PodIPAllocation](n.agent, tables.PodIPAllocationsTableName)
}

func joinAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}
