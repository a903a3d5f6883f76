package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/cnitest"
	"github.com/heraldlb/herald/test/netlab"
)

// lab is one part's world: a LAN of node namespaces, a control plane bound
// to the LAN, the binaries, and what to remove at the end.
type lab struct {
	work                      string
	lan                       *netlab.LAN
	c                         *cluster.Cluster
	herald                    versioned.Interface
	agentBin, dbgBin, ipamBin string
	agents                    []*agentproc.Agent
	teardown                  []func()
}

// newLab builds the LAN with the given hosts, starts the control plane,
// installs the CRDs and creates a Node for every host. Call close.
func newLab(ctx context.Context, hosts ...string) (l *lab, err error) {
	l = &lab{}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if _, err := cnitest.RequirePlugins(); err != nil {
		return nil, err
	}
	root := cluster.RepoRoot()
	if root == "" {
		return nil, errors.New("run me from inside the repository")
	}
	if l.work, err = os.MkdirTemp("", prefix); err != nil {
		return nil, err
	}
	l.teardown = append(l.teardown, func() { _ = os.RemoveAll(l.work) })
	if l.agentBin, l.dbgBin, err = agentproc.Build(root, filepath.Join(l.work, "bin")); err != nil {
		return nil, err
	}
	if l.ipamBin, err = cnitest.BuildHeraldIPAM(filepath.Join(l.work, "cni-bin")); err != nil {
		return nil, err
	}
	// Setup removes what an interrupted run left: the root veth and every
	// namespace named hbi-*, pods' included.
	if l.lan, err = netlab.New(prefix, subnet); err != nil {
		return nil, err
	}
	l.teardown = append(l.teardown, func() {
		for _, err := range l.lan.Teardown() {
			logf("teardown: %v", err)
		}
	})
	if err := l.lan.Setup(hosts...); err != nil {
		return nil, fmt.Errorf("building the LAN: %w", err)
	}
	if l.c, err = cluster.Start(cluster.Options{Addr: l.lan.RootIP().String()}); err != nil {
		return nil, err
	}
	l.teardown = append(l.teardown, l.c.Stop)
	if l.herald, err = versioned.NewForConfig(l.c.RESTConfig); err != nil {
		return nil, err
	}
	if err := l.c.InstallCRDs(ctx, filepath.Join(root, "install", "crds")); err != nil {
		return nil, fmt.Errorf("installing CRDs: %w", err)
	}
	for _, ns := range []string{leaseNS, benchNS} {
		if _, err := l.c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	for _, name := range hosts {
		if err := l.createNode(ctx, name, l.lan.Host(name).IP.String()); err != nil {
			return nil, err
		}
	}
	l.teardown = append(l.teardown, func() {
		for _, a := range l.agents {
			if err := a.Stop(); err != nil {
				logf("teardown: %v", err)
			}
		}
	})
	return l, nil
}

// close stops the agents and the control plane and removes the LAN, the
// pods' namespaces and the work directory.
func (l *lab) close() {
	for i := len(l.teardown) - 1; i >= 0; i-- {
		l.teardown[i]()
	}
	l.teardown = nil
}

// createNode creates a Node with an InternalIP.
func (l *lab) createNode(ctx context.Context, name, ip string) error {
	n, err := l.c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	_, err = l.c.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// createPool creates the default pool: IPv4 only, poolCIDR cut into
// CIDRs of the mask size.
func (l *lab) createPool(ctx context.Context, mask int) error {
	p := &v2alpha1.CiliumPodIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: tables.DefaultPodIPPool},
		Spec: v2alpha1.IPPoolSpec{IPv4: &v2alpha1.IPv4PoolSpec{
			CIDRs: []v2alpha1.PoolCIDR{poolCIDR}, MaskSize: uint8(mask),
		}},
	}
	_, err := l.herald.CiliumV2alpha1().CiliumPodIPPools().Create(ctx, p, metav1.CreateOptions{})
	return err
}

// node is a node namespace running an agent, and the container runtime's
// view of its pod network.
type node struct {
	name     string
	dir      string
	agent    *agentproc.Agent
	rt       *cnitest.Runtime
	socket   string
	stateDir string
}

// startNode starts the agent of a host with multi-pool IPAM (IPv4) and
// prepares its runtime, with the binaries of this tree.
func (l *lab) startNode(name string, extra ...string) (*node, error) {
	return l.startNodeWith(name, binaries{agent: l.agentBin, dbg: l.dbgBin, ipam: l.ipamBin}, extra...)
}

// binaries are one build of herald-agent, herald-dbg and herald-ipam.
type binaries struct{ agent, dbg, ipam string }

// startNodeWith is startNode with the binaries of another build (a
// baseline to compare with).
func (l *lab) startNodeWith(name string, bins binaries, extra ...string) (*node, error) {
	h := l.lan.Host(name)
	n := &node{name: name, dir: filepath.Join(l.work, name)}
	n.socket = filepath.Join(n.dir, "ipam.sock")
	n.stateDir = filepath.Join(n.dir, "state")
	args := append([]string{"--ipam=multi-pool", "--ipam-socket=" + n.socket, "--ipam-state-dir=" + n.stateDir}, extra...)
	n.agent = agentproc.New(agentproc.Options{
		Name: name, Netns: h.Netns, Dir: n.dir, AgentBin: bins.agent, DbgBin: bins.dbg,
		Kubeconfig: l.c.Kubeconfig, Namespace: leaseNS, Args: args,
	})
	if err := n.agent.Start(); err != nil {
		return nil, err
	}
	l.agents = append(l.agents, n.agent)
	var err error
	n.rt, err = cnitest.NodeNetwork{
		Netns: h.Netns, IPAMBin: bins.ipam, Socket: n.socket, StateDir: n.stateDir, CacheDir: filepath.Join(n.dir, "cni-cache"),
	}.Runtime()
	return n, err
}

// ensureBridge creates the node's bridge as the bridge plugin's first ADD
// would: the agent puts the gateway of the Pod's CIDR on it in every ADD,
// also when herald-ipam runs alone.
func (l *lab) ensureBridge(n *node) error {
	ns := l.lan.Host(n.name).Netns
	if exec.Command("ip", "-n", ns, "link", "show", "cni0").Run() == nil {
		return nil
	}
	for _, args := range [][]string{{"-n", ns, "link", "add", "cni0", "type", "bridge"}, {"-n", ns, "link", "set", "cni0", "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// waitFor polls cond every interval until it holds, ctx ends or within
// passes; agents that died are named in the error.
func (l *lab) waitFor(ctx context.Context, within, interval time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(within)
	for {
		ok, seen := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %s: %s%s", within, seen, agentproc.UnexpectedExits(l.agents...))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// agentLogs is the end of every agent's log, for an error message.
func (l *lab) agentLogs() string {
	var b strings.Builder
	for _, a := range l.agents {
		b.WriteString(a.Logs(40))
	}
	return b.String()
}

// createPods creates Pods bench/<name(i)> on the nodes node(i) picks, with
// workers concurrent clients, and calls created (from any goroutine) with
// each one as its Create returns.
func (l *lab) createPods(ctx context.Context, count, workers int, name func(int) string, nodeOf func(int) string, created func(i int, p *corev1.Pod)) error {
	idx := make(chan int)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				obj := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: benchNS},
					Spec:       corev1.PodSpec{NodeName: nodeOf(i), Containers: []corev1.Container{{Name: "c", Image: "none"}}},
				}
				p, err := l.c.Client.CoreV1().Pods(benchNS).Create(ctx, obj, metav1.CreateOptions{})
				if err != nil {
					errc <- fmt.Errorf("creating pod %s: %w", obj.Name, err)
					return
				}
				created(i, p)
			}
		}()
	}
	var err error
feed:
	for i := range count {
		select {
		case idx <- i:
		case err = <-errc:
			break feed
		}
	}
	close(idx)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return err
}

// createNetns creates count pod namespaces hbi-p-<base+i>, 8 at a time.
func createNetns(count, base int) ([]*cnitest.Netns, error) {
	out := make([]*cnitest.Netns, count)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	idx := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				ns, err := cnitest.NewNetns(fmt.Sprintf("%s%d", podPrefix, base+i))
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out[i] = ns
				mu.Unlock()
			}
		}()
	}
	for i := range count {
		idx <- i
	}
	close(idx)
	wg.Wait()
	return out, firstErr
}
