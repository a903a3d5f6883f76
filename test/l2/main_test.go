// Package l2 tests L2 announcements end to end on a real (virtual) LAN.
//
// TestMain builds (with test/netlab) a Linux bridge in its own network
// namespace (hl2-lan) and plugs into it, each with a veth:
//
//   - the root namespace (hl2-root, 198.18.0.1), where kube-apiserver binds,
//     so that agents in other namespaces reach it;
//   - three "node" namespaces hl2-node1..3 (eth0, 198.18.0.11-13), each
//     running its own herald-agent --node-name nodeN through
//     `ip netns exec` (test/agentproc);
//   - a client namespace hl2-client (eth0, 198.18.0.100), from which the
//     tests send ARP requests and capture every ARP frame (AF_PACKET).
//
// It starts etcd + kube-apiserver (test/cluster), installs the CRDs, creates
// the Node objects (no kubelet runs) and one LB IPAM pool, and starts the
// agents. node1 and node2 pin their maps in a bpffs the harness mounted, so
// the tests read them directly; node3 keeps the default --bpf-root, for
// which the agent has to mount bpffs itself (`ip netns exec` gives it a
// fresh /sys), and the tests read its maps through /proc/<pid>/root.
//
// Every test works with its own namespace, Service and policy, and leaves
// the three agents running. Tests wait for outcomes with bounded polling and
// never assert how long anything took.
//
// Needs root. Everything created is named hl2-* and removed at the end, and
// leftovers of an interrupted run are removed at the start.
package l2

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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
	"github.com/heraldlb/herald/test/arpwatch"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/netlab"
	"github.com/heraldlb/herald/test/suite"
)

// timeout bounds every wait. It is generous on purpose: tests check
// outcomes, never durations.
const timeout = 90 * time.Second

const (
	leaseNS  = metav1.NamespaceSystem
	poolName = "hl2-pool"
	// clusterDirFile, in the work directory, records the control plane's
	// directory so that a later run can stop it if this one is killed.
	clusterDirFile = "cluster-dir"
)

// Shared by all tests; set up once by TestMain.
var (
	testCluster *cluster.Cluster
	kube        kubernetes.Interface
	herald      versioned.Interface

	workDir string
	lan     *netlab.LAN

	nodes      []*node
	clientHost *netlab.Host // hl2-client
	rogueHost  *netlab.Host // hl2-rogue: a host that uses a VIP as its own
	client     *arpwatch.ARPClient
	client6    *arpwatch.NDPClient
)

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "l2: needs root (network namespaces, bpffs, eBPF); run it as root, as make test does")
		os.Exit(1)
	}
	os.Exit(run(m))
}

// teardown is the suite's cleanup, run at the end or on SIGINT/SIGTERM;
// run sets it up first.
var teardown *suite.Teardown

// atTeardown registers a cleanup step; steps run in reverse order.
func atTeardown(f func()) { teardown.Add(f) }

func run(m *testing.M) int {
	root := cluster.RepoRoot()
	if root == "" {
		fmt.Fprintln(os.Stderr, "l2: cannot find the repository root")
		return 1
	}
	for _, tool := range []string{"ip", "sysctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "l2: %s is missing (iproute2, procps)\n", tool)
			return 1
		}
	}
	// One run at a time on a machine: the LAN's names and addresses are
	// fixed, and a run removes what another left behind. The lock goes with
	// the process, however it ends.
	unlock, err := netlab.Lock("l2")
	if err != nil {
		fmt.Fprintln(os.Stderr, "l2:", err)
		return 1
	}
	defer unlock()
	cleanupLeftovers()

	teardown = suite.NewTeardown("l2")
	defer teardown.Run()

	workDir, err = os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "l2:", err)
		return 1
	}
	atTeardown(func() {
		for _, err := range agentproc.UnmountAll(workDir) {
			fmt.Fprintln(os.Stderr, "l2:", err)
		}
		_ = os.RemoveAll(workDir)
	})

	// Build first: a compile error is reported before anything is set up.
	// (cleanupLeftovers finds a killed run's agents by this path.)
	agentBin, dbgBin, err := agentproc.Build(root, filepath.Join(workDir, "bin"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "l2:", err)
		return 1
	}

	if err := setup(agentBin, dbgBin); err != nil {
		fmt.Fprintln(os.Stderr, "l2:", err)
		return 1
	}
	return m.Run()
}

func setup(agentBin, dbgBin string) error {
	var err error
	if lan, err = netlab.New(prefix, subnet); err != nil {
		return err
	}
	lan.SetMACPrefix(macPrefix)
	if err := lan.EnableIPv6(subnet6); err != nil {
		return err
	}
	atTeardown(func() {
		for _, err := range lan.Teardown() {
			fmt.Fprintln(os.Stderr, "l2:", err)
		}
	})
	names := []string{"node1", "node2", "node3"}
	if err := lan.Setup(names...); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	if clientHost, err = lan.Add("client", clientHostNum); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	if rogueHost, err = lan.Add("rogue", rogueHostNum); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	if err := checkPlan(lan, names); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}

	c, err := cluster.Start(cluster.Options{Addr: lan.RootIP().String()})
	if err != nil {
		return err
	}
	atTeardown(c.Stop)
	_ = os.WriteFile(filepath.Join(workDir, clusterDirFile), []byte(c.Dir), 0o644)
	testCluster = c
	kube = c.Client
	if herald, err = versioned.NewForConfig(c.RESTConfig); err != nil {
		return err
	}

	// The agents authenticate their peer traffic with a shared secret.
	secretFile := filepath.Join(workDir, "peer-secret")
	if err := os.WriteFile(secretFile, []byte("herald-test-peer-secret-0123456789"), 0o600); err != nil {
		return err
	}
	nodes = nil
	for i, name := range names {
		h := lan.Host(name)
		o := agentproc.Options{
			Name:       name,
			Netns:      h.Netns,
			Dir:        filepath.Join(workDir, name),
			AgentBin:   agentBin,
			DbgBin:     dbgBin,
			Kubeconfig: c.Kubeconfig,
			Namespace:  leaseNS,
			// On the node's LAN address: the test scrapes it from the root
			// namespace.
			MetricsAddr: h.IP.String() + ":9962",
			Args: []string{
				"--enable-l2-announcements",
				"--devices", devName,
				"--l2-announcements-lease-duration", leaseDuration.String(),
				"--l2-announcements-renew-deadline", renewDeadline.String(),
				"--l2-announcements-retry-period", retryPeriod.String(),
				"--l2-announcements-peer-secret-file", secretFile,
			},
		}
		// node1 and node2 pin their maps in a bpffs we mount; node3 keeps
		// the default and mounts one itself.
		if i != 2 {
			o.BPFRoot = filepath.Join(workDir, "bpffs", name)
			if err := agentproc.MountBPFFS(o.BPFRoot); err != nil {
				return err
			}
		}
		nodes = append(nodes, &node{
			Agent:  agentproc.New(o),
			host:   h,
			labels: map[string]string{"kubernetes.io/hostname": name, "hl2.test/node": name},
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testCluster.InstallCRDs(ctx, filepath.Join(cluster.RepoRoot(), "install", "crds")); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", leaseNS, err)
	}
	for _, n := range nodes {
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.labels}}
		created, err := kube.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Node %s: %w", n.Name, err)
		}
		// The agents reach each other at their Nodes' InternalIPs.
		created.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.host.IP.String()}}
		if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting the InternalIP of Node %s: %w", n.Name, err)
		}
	}
	pool := &v2alpha1.CiliumLoadBalancerIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: poolName},
		Spec: v2alpha1.CiliumLoadBalancerIPPoolSpec{
			Blocks: []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: poolCIDR}, {Cidr: poolCIDR6}},
		},
	}
	if _, err := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pool: %w", err)
	}

	if client, err = arpwatch.OpenARPClient(clientHost.Netns, clientHost.IP); err != nil {
		return fmt.Errorf("ARP client: %w", err)
	}
	atTeardown(client.Close)
	if client6, err = arpwatch.OpenNDPClient(clientHost.Netns, clientHost.IP6); err != nil {
		return fmt.Errorf("NDP client: %w", err)
	}
	atTeardown(client6.Close)

	atTeardown(func() {
		for _, n := range nodes {
			if err := n.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "l2:", err)
			}
		}
	})
	for _, n := range nodes {
		if err := n.Start(); err != nil {
			return err
		}
	}
	for _, n := range nodes {
		if err := n.waitReady(); err != nil {
			b, _ := os.ReadFile(n.LogPath())
			return fmt.Errorf("%w\n----- log of agent %s -----\n%s", err, n.Name, agentproc.Tail(string(b), 100))
		}
	}
	return nil
}
