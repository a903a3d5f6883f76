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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
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
	nodeNames = []string{"node1", "node2", "node3"}
	subnet    = netip.MustParsePrefix("198.18.4.0/24")
	subnet6   = netip.MustParsePrefix("fd00:4::/64")
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
	suite.Main(m, "network namespaces, CNI plugins", suite.Options{Name: "multipool", Prefix: prefix, Subnet: subnet,
		Hosts: nodeNames, Namespace: leaseNS, Check: checkSuiteWatch}, setup)
}

// checkSuiteWatch fails the run if, whatever the tests did, a CIDR was
// ever on two nodes at once.
func checkSuiteWatch() error {
	if vs := suiteWatch.Violations(); len(vs) > 0 {
		return fmt.Errorf("CIDRs on two nodes during the suite:\n%s", strings.Join(vs, "\n"))
	}
	fmt.Fprintln(os.Stderr, "multipool: suite-wide CiliumNode watch:", suiteWatch.Summary())
	return nil
}

func setup(env *suite.Env) error {
	var err error
	testCluster, kube, herald, lan, work = env.Cluster, env.Cluster.Client, env.Herald, env.LAN, env.Work
	teardown := env.Teardown
	if _, err := cnitest.RequirePlugins(); err != nil {
		return err
	}
	if ipamBin, err = cnitest.BuildHeraldIPAM(filepath.Join(work, "cni-bin")); err != nil {
		return err
	}
	cnitest.CleanupNetns(podPrefix)
	teardown.Add(func() { cnitest.CleanupNetns(podPrefix) })
	// Dual-stack nodes: netlab's LAN is IPv4; the nodes get an IPv6
	// address of subnet6 on eth0 too (no duplicate detection: the
	// addresses are ours), and pods get both families.
	for i, name := range nodeNames {
		if err := enableIPv6(lan.Host(name).Netns, nodeIPv6(i)); err != nil {
			return fmt.Errorf("IPv6 on %s: %w", name, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i, name := range nodeNames {
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := env.CreateNode(ctx, obj, lan.Host(name).IP, nodeIPv6(i)); err != nil {
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
			env.Report(n.agent.Stop())
		}
	})
	for _, name := range nodeNames {
		n, err := newNode(name, env.AgentBin, env.DbgBin)
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
