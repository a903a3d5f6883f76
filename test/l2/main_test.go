// Package l2 tests L2 announcements end to end on a real (virtual) LAN.
//
// TestMain builds a Linux bridge in its own network namespace (hl2-lan) and
// plugs into it, each with a veth:
//
//   - the root namespace (hl2-root, 198.18.0.1), where kube-apiserver binds,
//     so that agents in other namespaces reach it;
//   - three "node" namespaces hl2-node1..3 (eth0, 198.18.0.11-13), each
//     running its own herald-agent --node-name nodeN through
//     `ip netns exec`;
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
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/cluster"
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

	workDir          string
	agentBin, dbgBin string

	nodes  []*node
	client *arpClient
)

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "l2: skipping: needs root (network namespaces, bpffs, eBPF)")
		os.Exit(0)
	}
	os.Exit(run(m))
}

var (
	teardownMu    sync.Mutex
	teardownSteps []func()
)

// atTeardown registers a cleanup step; steps run in reverse order.
func atTeardown(f func()) {
	teardownMu.Lock()
	defer teardownMu.Unlock()
	teardownSteps = append(teardownSteps, f)
}

// teardown runs the steps once (from the end of run, or from the signal
// handler).
func teardown() {
	teardownMu.Lock()
	defer teardownMu.Unlock()
	for i := len(teardownSteps) - 1; i >= 0; i-- {
		teardownSteps[i]()
	}
	teardownSteps = nil
}

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
	unlock, err := lockRun()
	if err != nil {
		fmt.Fprintln(os.Stderr, "l2:", err)
		return 1
	}
	defer unlock()
	cleanupLeftovers()

	// Interrupted (Ctrl-C): clean up all the same.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "l2: %v: cleaning up\n", sig)
		teardown()
		os.Exit(1)
	}()
	defer teardown()

	workDir, err = os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "l2:", err)
		return 1
	}
	atTeardown(func() {
		for _, err := range unmountAll(workDir) {
			fmt.Fprintln(os.Stderr, "l2:", err)
		}
		_ = os.RemoveAll(workDir)
	})

	// Build first: a compile error is reported before anything is set up.
	agentBin = filepath.Join(workDir, "bin", "herald-agent")
	dbgBin = filepath.Join(workDir, "bin", "herald-dbg")
	for bin, pkg := range map[string]string{agentBin: "./cmd/herald-agent", dbgBin: "./cmd/herald-dbg"} {
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "l2: go build %s: %v\n%s\n", pkg, err, out)
			return 1
		}
	}

	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "l2:", err)
		return 1
	}
	return m.Run()
}

func setup() error {
	nodes = nil
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("node%d", i)
		n := &node{
			name: name,
			lanHost: lanHost{
				ns:   prefix + name,
				port: name,
				ip:   netip.AddrFrom4([4]byte{198, 18, 0, byte(10 + i)}),
				mac:  mustMAC(fmt.Sprintf("02:48:4c:32:00:%02x", 10+i)),
			},
			labels: map[string]string{"kubernetes.io/hostname": name, "hl2.test/node": name},
			dir:    filepath.Join(workDir, name),
		}
		if i != 3 {
			n.bpfRoot = filepath.Join(workDir, "bpffs", name)
		}
		nodes = append(nodes, n)
	}
	clientHost := lanHost{ns: clientNS, port: "client", ip: clientIP, mac: clientMAC}

	atTeardown(func() {
		for _, err := range teardownLAN() {
			fmt.Fprintln(os.Stderr, "l2:", err)
		}
	})
	hosts := []lanHost{clientHost}
	for _, n := range nodes {
		hosts = append(hosts, n.lanHost)
	}
	if err := setupLAN(hosts); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	for _, n := range nodes {
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return err
		}
		if n.bpfRoot != "" {
			if err := mountBPFFS(n.bpfRoot); err != nil {
				return err
			}
		}
	}

	c, err := cluster.Start(cluster.Options{Addr: rootIP.String()})
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

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testCluster.InstallCRDs(ctx, filepath.Join(cluster.RepoRoot(), "install", "crds")); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", leaseNS, err)
	}
	for _, n := range nodes {
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels}}
		if _, err := kube.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Node %s: %w", n.name, err)
		}
	}
	pool := &v2alpha1.CiliumLoadBalancerIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: poolName},
		Spec: v2alpha1.CiliumLoadBalancerIPPoolSpec{
			Blocks: []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: poolCIDR}},
		},
	}
	if _, err := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pool: %w", err)
	}

	if client, err = openARPClient(clientNS, clientIP); err != nil {
		return fmt.Errorf("ARP client: %w", err)
	}
	atTeardown(client.close)

	atTeardown(func() {
		for _, n := range nodes {
			if err := n.stop(); err != nil {
				fmt.Fprintln(os.Stderr, "l2:", err)
			}
		}
	})
	for _, n := range nodes {
		if err := n.start(); err != nil {
			return err
		}
	}
	for _, n := range nodes {
		if err := n.waitReady(); err != nil {
			b, _ := os.ReadFile(n.current().logPath)
			return fmt.Errorf("%w\n----- log of agent %s -----\n%s", err, n.name, tail(string(b), 100))
		}
	}
	return nil
}

// lockRun takes the machine-wide lock of this suite, waiting for another
// run to finish.
func lockRun() (unlock func(), err error) {
	path := filepath.Join(os.TempDir(), "herald-test-l2.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		fmt.Fprintln(os.Stderr, "l2: another run of this suite is in progress; waiting for it to finish")
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
	}
	return func() { f.Close() }, nil
}

// stopLeftoverCluster stops the control plane of an earlier run.
func stopLeftoverCluster(dir string) {
	if dir == "" || !strings.HasPrefix(filepath.Base(dir), "herald-cluster-") {
		return
	}
	if _, err := os.Stat(dir); err != nil {
		return
	}
	root := cluster.RepoRoot()
	if root == "" {
		return
	}
	fmt.Fprintln(os.Stderr, "l2: stopping the leftover control plane in", dir)
	out, err := exec.Command(filepath.Join(root, "install", "dev", "cluster-down.sh"), dir).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "l2: %v\n%s\n", err, out)
		return
	}
	_ = os.RemoveAll(dir)
}
