// Package multipool tests multi-pool pod IPAM end to end: three "nodes"
// (network namespaces on a test LAN, test/netlab) each run herald-agent
// with ipam: multi-pool; "pods" are network namespaces wired by the real
// bridge CNI plugin with herald-ipam as its IPAM, driven through libcni as
// a container runtime does (test/cnitest), with Pod objects in a real
// kube-apiserver (no kubelet). Nodes route to each other's pod CIDRs
// (auto-direct-node-routes).
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
	"os/signal"
	"path/filepath"
	"syscall"
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
	"github.com/heraldlb/herald/test/netlab"
)

const (
	prefix  = "hmp-"
	leaseNS = metav1.NamespaceSystem
	timeout = 2 * time.Minute
)

var subnet = netip.MustParsePrefix("198.18.4.0/24")

// Shared by all tests; set up by TestMain.
var (
	testCluster *cluster.Cluster
	kube        kubernetes.Interface
	herald      versioned.Interface
	lan         *netlab.LAN
	nodes       []*node
	work        string
	ipamBin     string
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
	var teardown []func()
	cleanup := func() {
		for i := len(teardown) - 1; i >= 0; i-- {
			teardown[i]()
		}
		teardown = nil
	}
	defer cleanup()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		cleanup()
		os.Exit(1)
	}()
	if work, err = os.MkdirTemp("", prefix); err != nil {
		fmt.Fprintln(os.Stderr, "multipool:", err)
		return 1
	}
	teardown = append(teardown, func() { _ = os.RemoveAll(work) })
	if err := setup(&teardown); err != nil {
		fmt.Fprintln(os.Stderr, "multipool:", err)
		return 1
	}
	return m.Run()
}

func setup(teardown *[]func()) error {
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
	*teardown = append(*teardown, func() { cnitest.CleanupNetns(podPrefix) })
	if lan, err = netlab.New(prefix, subnet); err != nil {
		return err
	}
	*teardown = append(*teardown, func() {
		for _, err := range lan.Teardown() {
			fmt.Fprintln(os.Stderr, "multipool:", err)
		}
	})
	names := []string{"node1", "node2", "node3"}
	if err := lan.Setup(names...); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}

	c, err := cluster.Start(cluster.Options{Addr: lan.RootIP().String()})
	if err != nil {
		return err
	}
	*teardown = append(*teardown, c.Stop)
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
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: h.IP.String()}}
		if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if err := createDefaultPools(ctx); err != nil {
		return err
	}

	*teardown = append(*teardown, func() {
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
	return nil
}
