// Package multipool tests multi-pool pod IPAM end to end: three "nodes"
// (network namespaces on a test LAN, test/netlab) each run herald-agent
// with ipam: multi-pool; "pods" are network namespaces wired by the real
// bridge CNI plugin with herald-ipam as its IPAM, driven through libcni as
// a container runtime does (test/cnitest), with Pod objects in a real
// kube-apiserver (no kubelet). Nodes route to each other's pod CIDRs
// (auto-direct-node-routes). L2 pod announcements are checked from a
// listener host plugged into the same LAN (l2pod_test.go).
//
// Addresses: the LAN is 198.18.4.0/24; pools come from 198.18.64.0/18 and
// fd00:64::/48. Everything is named hmp-* and removed at the end (and at
// the start, when an interrupted run left it). Needs root. Tests check
// outcomes, never durations.
package multipool

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/cnitest"
	"github.com/heraldlb/herald/test/ipamwatch"
	"github.com/heraldlb/herald/test/netlab"
	"github.com/heraldlb/herald/test/suite"
)

const (
	prefix  = "hmp-"
	leaseNS = metav1.NamespaceSystem
	timeout = 2 * time.Minute
)

var (
	subnet  = netip.MustParsePrefix("198.18.4.0/24")
	subnet6 = netip.MustParsePrefix("fd00:4::/64")
)

// nodeIPv6 is the i-th node's IPv6 address on the LAN (::11, ::12, ...).
func nodeIPv6(i int) netip.Addr {
	b := subnet6.Addr().As16()
	b[15] = byte(0x11 + i)
	return netip.AddrFrom16(b)
}

// enableIPv6 turns IPv6 on in a node's namespace and gives eth0 an address.
func enableIPv6(netns string, addr netip.Addr) error {
	for _, args := range [][]string{
		{"netns", "exec", netns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.default.disable_ipv6=0",
			"net.ipv6.conf.eth0.disable_ipv6=0", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"},
		{"-n", netns, "addr", "add", addr.String() + "/64", "dev", "eth0", "nodad"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %v: %w: %s", args, err, out)
		}
	}
	return nil
}

// Shared by all tests; set up by TestMain.
var (
	testCluster *cluster.Cluster
	kube        kubernetes.Interface
	herald      versioned.Interface
	lan         *netlab.LAN
	nodes       []*node
	work        string
	ipamBin     string
	// suiteWatch checks every CiliumNode change of the whole suite.
	suiteWatch *ipamwatch.Watcher
)

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "multipool: needs root (network namespaces, CNI plugins)")
		os.Exit(1)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	unlock, err := netlab.Lock("multipool")
	if err != nil {
		fmt.Fprintln(os.Stderr, "multipool:", err)
		return 1
	}
	defer unlock()
	teardown := suite.NewTeardown("multipool")
	defer teardown.Run()
	if work, err = os.MkdirTemp("", prefix); err != nil {
		fmt.Fprintln(os.Stderr, "multipool:", err)
		return 1
	}
	teardown.Add(func() { _ = os.RemoveAll(work) })
	if err := setup(teardown); err != nil {
		fmt.Fprintln(os.Stderr, "multipool:", err)
		return 1
	}
	code := m.Run()
	// Whatever the tests did, no CIDR was ever on two nodes at once.
	if vs := suiteWatch.Violations(); len(vs) > 0 {
		fmt.Fprintf(os.Stderr, "multipool: CIDRs on two nodes during the suite:\n%s\n", strings.Join(vs, "\n"))
		return 1
	}
	fmt.Fprintln(os.Stderr, "multipool: suite-wide CiliumNode watch:", suiteWatch.Summary())
	return code
}

func setup(teardown *suite.Teardown) error {
	if _, err := cnitest.RequirePlugins(); err != nil {
		return err
	}
	root := cluster.RepoRoot()
	agentBin, dbgBin, err := agentproc.Build(root, filepath.Join(work, "bin"))
	if err != nil {
		return err
	}
	if ipamBin, err = cnitest.BuildHeraldIPAM(filepath.Join(work, "cni-bin")); err != nil {
		return err
	}
	cnitest.CleanupNetns(podPrefix)
	teardown.Add(func() { cnitest.CleanupNetns(podPrefix) })
	if lan, err = netlab.New(prefix, subnet); err != nil {
		return err
	}
	teardown.Add(func() {
		for _, err := range lan.Teardown() {
			fmt.Fprintln(os.Stderr, "multipool:", err)
		}
	})
	names := []string{"node1", "node2", "node3"}
	if err := lan.Setup(names...); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	// Dual-stack nodes: netlab's LAN is IPv4; the nodes get an IPv6
	// address of subnet6 on eth0 too (no duplicate detection: the
	// addresses are ours), and pods get both families.
	for i, name := range names {
		if err := enableIPv6(lan.Host(name).Netns, nodeIPv6(i)); err != nil {
			return fmt.Errorf("IPv6 on %s: %w", name, err)
		}
	}

	c, err := cluster.Start(cluster.Options{Addr: lan.RootIP().String()})
	if err != nil {
		return err
	}
	teardown.Add(c.Stop)
	testCluster, kube = c, c.Client
	if herald, err = versioned.NewForConfig(c.RESTConfig); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.InstallCRDs(ctx, filepath.Join(root, "install", "crds")); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, name := range names {
		h := lan.Host(name)
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		n, err := kube.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		n.Status.Addresses = []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: h.IP.String()},
			{Type: corev1.NodeInternalIP, Address: nodeIPv6(slices.Index(names, name)).String()},
		}
		if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	teardown.Add(stopWatch)
	if suiteWatch, err = ipamwatch.Start(watchCtx, herald); err != nil {
		return err
	}
	if err := createDefaultPools(ctx); err != nil {
		return err
	}

	teardown.Add(func() {
		for _, n := range nodes {
			if err := n.agent.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "multipool:", err)
			}
		}
	})
	for _, name := range names {
		n, err := newNode(name, agentBin, dbgBin)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	// Tests add pods at once: the agents must serve the plugin, with a
	// CIDR of the default pool, before the first test runs.
	rctx, rcancel := context.WithTimeout(context.Background(), timeout)
	defer rcancel()
	for _, n := range nodes {
		if err := n.waitReady(rctx); err != nil {
			return err
		}
	}
	return nil
}
