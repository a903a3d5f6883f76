// Package faults tests what Herald owns under faults, against a real
// kube-apiserver: three agents in their own network namespaces on a test
// LAN (test/netlab), the API server in the root namespace. The allocating
// agent is frozen (SIGSTOP/SIGCONT), killed (SIGKILL) and cut off the
// network while Services come and go; the API server is frozen and
// restarted. Throughout, a watch checks every Service change (test/lbwatch):
// no address on two Services, no Service whose address changes.
//
// Tests check outcomes, never durations; the times things took are logged.
// Needs root. Everything is named hf-* and removed at the end (and at the
// start, if an interrupted run left it).
package faults

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/netlab"
	"github.com/heraldlb/herald/test/suite"
)

const (
	prefix   = "hf-"
	leaseNS  = metav1.NamespaceSystem
	poolName = "hf-pool"
	// poolCIDR is data in the API server only (L2 is off: nothing is ever
	// announced or sent to these addresses).
	poolCIDR = "198.19.0.0/16"
	// healthPort is every agent's --health-serve-addr port, on its LAN IP.
	healthPort = 9965
	// timeout bounds every wait; generous, tests check outcomes.
	timeout = 2 * time.Minute
)

var subnet = netip.MustParsePrefix("198.18.2.0/24")

// Shared by all tests; set up by TestMain.
var (
	testCluster *cluster.Cluster
	kube        kubernetes.Interface
	herald      versioned.Interface
	lan         *netlab.LAN
	agents      []*agentproc.Agent
)

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "faults: needs root (network namespaces); run it as root, as make test does")
		os.Exit(1)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	unlock, err := netlab.Lock("faults")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	defer unlock()

	teardown := suite.NewTeardown("faults")
	defer teardown.Run()

	work, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	teardown.Add(func() { _ = os.RemoveAll(work) })
	if err := setup(work, teardown); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	return m.Run()
}

func setup(work string, teardown *suite.Teardown) error {
	agentBin, dbgBin, err := agentproc.Build(cluster.RepoRoot(), filepath.Join(work, "bin"))
	if err != nil {
		return err
	}
	if lan, err = netlab.New(prefix, subnet); err != nil {
		return err
	}
	teardown.Add(func() {
		for _, err := range lan.Teardown() {
			fmt.Fprintln(os.Stderr, "faults:", err)
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
	teardown.Add(c.Stop)
	testCluster, kube = c, c.Client
	if herald, err = versioned.NewForConfig(c.RESTConfig); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.InstallCRDs(ctx, filepath.Join(cluster.RepoRoot(), "install", "crds")); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	pool := &v2alpha1.CiliumLoadBalancerIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: poolName},
		Spec:       v2alpha1.CiliumLoadBalancerIPPoolSpec{Blocks: []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: poolCIDR}}},
	}
	if _, err := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pool: %w", err)
	}

	teardown.Add(func() {
		for _, a := range agents {
			if err := a.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "faults:", err)
			}
		}
	})
	for _, name := range names {
		h := lan.Host(name)
		a := agentproc.New(agentproc.Options{
			Name: name, Netns: h.Netns, Dir: filepath.Join(work, name),
			AgentBin: agentBin, DbgBin: dbgBin,
			Kubeconfig: c.Kubeconfig, Namespace: leaseNS,
			HealthAddr: fmt.Sprintf("%s:%d", h.IP, healthPort),
		})
		if err := a.Start(); err != nil {
			return err
		}
		agents = append(agents, a)
	}
	return nil
}
