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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
	for _, tool := range []string{"ip", "sysctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "l2: %s is missing (iproute2, procps)\n", tool)
			os.Exit(1)
		}
	}
	suite.Main(m, "network namespaces, bpffs, eBPF", suite.Options{Name: "l2", Prefix: prefix, Subnet: subnet,
		LAN: func(l *netlab.LAN) error {
			l.SetMACPrefix(macPrefix)
			return l.EnableIPv6(subnet6)
		},
		Hosts: nodeNames, Namespace: leaseNS}, setup)
}

// teardown is the suite's cleanup, run at the end or on SIGINT/SIGTERM;
// setup sets it first.
var teardown *suite.Teardown

// atTeardown registers a cleanup step; steps run in reverse order.
func atTeardown(f func()) { teardown.Add(f) }

func setup(env *suite.Env) error {
	var err error
	teardown, workDir, lan = env.Teardown, env.Work, env.LAN
	testCluster, kube, herald = env.Cluster, env.Cluster.Client, env.Herald
	if clientHost, err = lan.Add("client", clientHostNum); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	if rogueHost, err = lan.Add("rogue", rogueHostNum); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	if err := checkPlan(lan, nodeNames); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}

	// The agents authenticate their peer traffic with a shared secret.
	secretFile := filepath.Join(workDir, "peer-secret")
	if err := os.WriteFile(secretFile, []byte("herald-test-peer-secret-0123456789"), 0o600); err != nil {
		return err
	}
	nodes = nil
	for i, name := range nodeNames {
		h := lan.Host(name)
		o := agentproc.Options{
			Name:       name,
			Netns:      h.Netns,
			Dir:        filepath.Join(workDir, name),
			AgentBin:   env.AgentBin,
			DbgBin:     env.DbgBin,
			Kubeconfig: testCluster.Kubeconfig,
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
				// Most of the suite's Services have no EndpointSlice (no
				// kube-controller-manager runs): they stay announced, as
				// before Herald withdrew Services without a ready endpoint.
				// TestWithdrawnWithoutReadyEndpoint restarts the agents
				// with the default.
				"--enable-no-service-endpoints-routable",
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
	for _, n := range nodes {
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.labels}}
		// The agents reach each other at their Nodes' InternalIPs.
		if err := env.CreateNode(ctx, obj, n.host.IP); err != nil {
			return err
		}
	}
	if err := env.CreateLBPool(ctx, poolName, poolCIDR, poolCIDR6); err != nil {
		return err
	}

	if client, err = arpwatch.OpenARPClient(clientHost.Netns, clientHost.IP); err != nil {
		return fmt.Errorf("ARP client: %w", err)
	}
	atTeardown(client.Close)
	if client6, err = arpwatch.OpenNDPClient(clientHost.Netns, clientHost.IP6); err != nil {
		return fmt.Errorf("NDP client: %w", err)
	}
	atTeardown(client6.Close)

	if err := env.StartAgents(agents()...); err != nil {
		return err
	}
	for _, n := range nodes {
		if err := n.waitReady(); err != nil {
			b, _ := os.ReadFile(n.LogPath())
			return fmt.Errorf("%w\n----- log of agent %s -----\n%s", err, n.Name, agentproc.Tail(string(b), 100))
		}
	}
	return nil
}
