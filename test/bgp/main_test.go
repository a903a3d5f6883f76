// Package bgp tests the BGP control plane end to end: herald-agents with
// GoBGP embedded, peering with a real FRR router, against a real
// kube-apiserver.
//
// TestMain builds a LAN of network namespaces (test/netlab, prefix hbgp-,
// 198.18.44.0/24 and fd00:18:0:44::/64): the root namespace (.1, where
// kube-apiserver binds), three nodes (.11-.13) each running
// `herald-agent --enable-bgp-control-plane --ipam=multi-pool` (so that each
// holds a CIDR of the pod pool hbgp-green) and a router namespace (.2)
// running FRR (zebra + bgpd, test/frr) with AS 65000, eBGP to the nodes
// (AS 65001) over IPv4 and IPv6, maximum-paths 8, graceful restart. It
// creates the Node objects (no kubelet runs), an LB IPAM pool and the BGP
// resources every test shares:
//
//   - CiliumBGPClusterConfig hbgp (nodes labelled hbgp.test/bgp=main):
//     instance main, AS 65001, peers tor4 (198.18.44.2) and tor6
//     (fd00:18:0:44::2), peer configs hbgp-v4 and hbgp-v6;
//   - the peer configs: one family each, advertisements labelled
//     hbgp.test/advertise=lb, short timers and graceful restart;
//   - CiliumBGPAdvertisement hbgp-lb: LoadBalancer IPs of Services
//     labelled hbgp.test/bgp=yes.
//
// Tests read what FRR learned (`show bgp ... json`) and its kernel routes,
// and wait for outcomes with bounded polling; they never assert how long
// anything took. Needs root; everything is named hbgp-* and removed at the
// end, leftovers of a killed run at the start.
package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/frr"
	"github.com/heraldlb/herald/test/netlab"
	"github.com/heraldlb/herald/test/suite"
)

// timeout bounds every wait: generous, tests check outcomes only.
const timeout = 90 * time.Second

const (
	prefix         = "hbgp-"
	clusterDirFile = "cluster-dir"
	routerASN      = 65000
	nodeASN        = 65001
	routerHostNum  = 2
	poolName       = "hbgp-pool"
	podPoolName    = "hbgp-green"
	podPoolCIDR    = "198.18.48.0/24"
	secretsNS      = "kube-system"

	// The shared BGP resources.
	clusterConfigName = "hbgp"
	peerConfigV4      = "hbgp-v4"
	peerConfigV6      = "hbgp-v6"
	advertName        = "hbgp-lb"
	bgpNodeLabel      = "hbgp.test/bgp"
	advertLabel       = "hbgp.test/advertise"
	serviceLabel      = "hbgp.test/bgp"
)

var (
	subnet    = netip.MustParsePrefix("198.18.44.0/24")
	subnet6   = netip.MustParsePrefix("fd00:18:0:44::/64")
	poolCIDR  = "198.18.56.0/22" // 1024 addresses: BenchmarkScale makes 1000 Services
	poolCIDR6 = "fd00:18:0:45::/112"
)

// Shared by all tests; set up once by TestMain.
var (
	testCluster *cluster.Cluster
	kube        kubernetes.Interface
	herald      versioned.Interface
	workDir     string
	lan         *netlab.LAN
	nodes       []*node
	router      *frr.Router
	routerHost  *netlab.Host
	teardown    *suite.Teardown
)

// node is one node namespace with its agent.
type node struct {
	*agentproc.Agent
	host *netlab.Host
}

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "bgp: needs root (network namespaces, FRR); run it as root, as make test does")
		os.Exit(1)
	}
	os.Exit(run(m))
}

func atTeardown(f func()) { teardown.Add(f) }

func run(m *testing.M) int {
	root := cluster.RepoRoot()
	if root == "" {
		fmt.Fprintln(os.Stderr, "bgp: cannot find the repository root")
		return 1
	}
	unlock, err := netlab.Lock("bgp")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bgp:", err)
		return 1
	}
	defer unlock()
	cleanupLeftovers()

	teardown = suite.NewTeardown("bgp")
	defer teardown.Run()
	if workDir, err = os.MkdirTemp("", prefix); err != nil {
		fmt.Fprintln(os.Stderr, "bgp:", err)
		return 1
	}
	atTeardown(func() { _ = os.RemoveAll(workDir) })
	agentBin, dbgBin, err := agentproc.Build(root, filepath.Join(workDir, "bin"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bgp:", err)
		return 1
	}
	if err := setup(agentBin, dbgBin); err != nil {
		fmt.Fprintln(os.Stderr, "bgp:", err)
		return 1
	}
	return m.Run()
}

// routerConfig is FRR's bgpd configuration: every node a neighbor over
// IPv4 (ipv4 unicast) and IPv6 (ipv6 unicast), ECMP across them, graceful
// restart (FRR keeps a restarting node's routes, marked stale).
func routerConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n bgp graceful-restart\n", routerASN, routerHost.IP)
	for _, n := range nodes {
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n neighbor %s timers connect 1\n", n.host.IP, nodeASN, n.host.IP)
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n neighbor %s timers connect 1\n", n.host.IP6, nodeASN, n.host.IP6)
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "  neighbor %s activate\n", n.host.IP)
	}
	b.WriteString(" exit-address-family\n address-family ipv6 unicast\n  maximum-paths 8\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "  neighbor %s activate\n", n.host.IP6)
	}
	b.WriteString(" exit-address-family\n")
	return b.String()
}

func setup(agentBin, dbgBin string) error {
	var err error
	if lan, err = netlab.New(prefix, subnet); err != nil {
		return err
	}
	if err := lan.EnableIPv6(subnet6); err != nil {
		return err
	}
	atTeardown(func() {
		for _, err := range lan.Teardown() {
			fmt.Fprintln(os.Stderr, "bgp:", err)
		}
	})
	names := []string{"node1", "node2", "node3"}
	if err := lan.Setup(names...); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	if routerHost, err = lan.Add("router", routerHostNum); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}

	c, err := cluster.Start(cluster.Options{Addr: lan.RootIP().String()})
	if err != nil {
		return err
	}
	atTeardown(c.Stop)
	_ = os.WriteFile(filepath.Join(workDir, clusterDirFile), []byte(c.Dir), 0o644)
	testCluster, kube = c, c.Client
	if herald, err = versioned.NewForConfig(c.RESTConfig); err != nil {
		return err
	}
	for _, name := range names {
		h := lan.Host(name)
		nodes = append(nodes, &node{host: h, Agent: agentproc.New(agentproc.Options{
			Name: name, Netns: h.Netns, Dir: filepath.Join(workDir, name),
			AgentBin: agentBin, DbgBin: dbgBin, Kubeconfig: c.Kubeconfig, Namespace: metav1.NamespaceSystem,
			MetricsAddr: h.IP.String() + ":9962",
			Args: []string{"--enable-bgp-control-plane", "--enable-ipv6", "--bgp-secrets-namespace", secretsNS,
				// Multi-pool IPAM, so that nodes hold CIDRs of a pod pool to
				// advertise: each asks for 4 addresses of it at start.
				"--ipam=multi-pool", "--ipam-multi-pool-pre-allocation=" + podPoolName + "=4",
				"--ipam-socket=" + filepath.Join(workDir, name, "ipam.sock"), "--ipam-state-dir=" + filepath.Join(workDir, name, "ipam-state")},
		})})
	}

	router, err = frr.Start(frr.Options{Netns: routerHost.Netns, Dir: filepath.Join(workDir, "frr"), Name: "tor", Config: routerConfig()})
	if err != nil {
		return fmt.Errorf("starting FRR: %w", err)
	}
	atTeardown(func() { _ = router.Stop() })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testCluster.InstallCRDs(ctx, filepath.Join(cluster.RepoRoot(), "install", "crds")); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for i, n := range nodes {
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{"kubernetes.io/hostname": n.Name, bgpNodeLabel: "main"}},
			Spec: corev1.NodeSpec{PodCIDRs: podCIDRs(i)}}
		created, err := kube.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Node %s: %w", n.Name, err)
		}
		created.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.host.IP.String()}, {Type: corev1.NodeInternalIP, Address: n.host.IP6.String()}}
		if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting the InternalIPs of Node %s: %w", n.Name, err)
		}
	}
	if err := createSharedResources(ctx); err != nil {
		return err
	}

	atTeardown(func() {
		for _, n := range nodes {
			if err := n.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "bgp:", err)
			}
		}
	})
	for _, n := range nodes {
		if err := n.Start(); err != nil {
			return err
		}
	}
	// Every session up before the tests start.
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.host.IP.String(), n.host.IP6.String())
	}
	if _, err := router.WaitEstablished(ctx, addrs...); err != nil {
		var logs strings.Builder
		for _, n := range nodes {
			fmt.Fprintf(&logs, "----- log of agent %s -----\n%s\n", n.Name, n.Logs(60))
		}
		return fmt.Errorf("sessions with FRR: %w\n%s----- FRR -----\n%s", err, logs.String(), router.LogTail(60))
	}
	return nil
}

// podCIDRs are the n-th node's pod CIDRs (Kubernetes IPAM, which no
// controller runs here: set at creation).
func podCIDRs(n int) []string {
	return []string{fmt.Sprintf("198.18.47.%d/26", 64*n), fmt.Sprintf("fd00:18:0:47:%d::/80", n+1)}
}

// The shared BGP resources, as a user would write them (Cilium's examples).
func createSharedResources(ctx context.Context) error {
	c := herald.CiliumV2alpha1()
	pool := &v2alpha1.CiliumLoadBalancerIPPool{ObjectMeta: metav1.ObjectMeta{Name: poolName},
		Spec: v2alpha1.CiliumLoadBalancerIPPoolSpec{Blocks: []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: poolCIDR}, {Cidr: poolCIDR6}}}}
	if _, err := c.CiliumLoadBalancerIPPools().Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pool: %w", err)
	}
	podPool := &v2alpha1.CiliumPodIPPool{ObjectMeta: metav1.ObjectMeta{Name: podPoolName, Labels: map[string]string{"routed": "true"}},
		Spec: v2alpha1.IPPoolSpec{IPv4: &v2alpha1.IPv4PoolSpec{CIDRs: []v2alpha1.PoolCIDR{podPoolCIDR}, MaskSize: 28}}}
	if _, err := c.CiliumPodIPPools().Create(ctx, podPool, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CiliumPodIPPool: %w", err)
	}
	cc := &v2alpha1.CiliumBGPClusterConfig{
		ObjectMeta: metav1.ObjectMeta{Name: clusterConfigName},
		Spec: v2alpha1.CiliumBGPClusterConfigSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{bgpNodeLabel: "main"}},
			BGPInstances: []v2alpha1.CiliumBGPInstance{{
				Name: "main", LocalASN: ptr.To[int64](nodeASN),
				Peers: []v2alpha1.CiliumBGPPeer{
					{Name: "tor4", PeerAddress: ptr.To(routerHost.IP.String()), PeerASN: ptr.To[int64](routerASN),
						PeerConfigRef: &v2alpha1.PeerConfigReference{Name: peerConfigV4}},
					{Name: "tor6", PeerAddress: ptr.To(routerHost.IP6.String()), PeerASN: ptr.To[int64](routerASN),
						PeerConfigRef: &v2alpha1.PeerConfigReference{Name: peerConfigV6}},
				},
			}},
		},
	}
	if _, err := c.CiliumBGPClusterConfigs().Create(ctx, cc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CiliumBGPClusterConfig: %w", err)
	}
	for name, afi := range map[string]string{peerConfigV4: "ipv4", peerConfigV6: "ipv6"} {
		if _, err := c.CiliumBGPPeerConfigs().Create(ctx, peerConfig(name, afi, ""), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CiliumBGPPeerConfig: %w", err)
		}
	}
	adv := &v2alpha1.CiliumBGPAdvertisement{
		ObjectMeta: metav1.ObjectMeta{Name: advertName, Labels: map[string]string{advertLabel: "lb"}},
		Spec: v2alpha1.CiliumBGPAdvertisementSpec{Advertisements: []v2alpha1.BGPAdvertisement{{
			AdvertisementType: v2alpha1.BGPServiceAdvert,
			Service:           &v2alpha1.BGPServiceOptions{Addresses: []v2alpha1.BGPServiceAddressType{v2alpha1.BGPLoadBalancerIPAddr}},
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{serviceLabel: "yes"}},
			Attributes: &v2alpha1.BGPAttributes{Communities: &v2alpha1.BGPCommunities{
				Standard: []v2alpha1.BGPStandardCommunity{"65001:100"}, Large: []v2alpha1.BGPLargeCommunity{"65001:1:2"}}},
		}}},
	}
	if _, err := c.CiliumBGPAdvertisements().Create(ctx, adv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CiliumBGPAdvertisement: %w", err)
	}
	return nil
}

// peerConfig is one family's peer config: short timers so that the tests
// see sessions come and go quickly, graceful restart on.
func peerConfig(name, afi, authSecret string) *v2alpha1.CiliumBGPPeerConfig {
	pc := &v2alpha1.CiliumBGPPeerConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v2alpha1.CiliumBGPPeerConfigSpec{
			Timers:          &v2alpha1.CiliumBGPTimers{ConnectRetryTimeSeconds: ptr.To[int32](1), HoldTimeSeconds: ptr.To[int32](9), KeepAliveTimeSeconds: ptr.To[int32](3)},
			GracefulRestart: &v2alpha1.CiliumBGPNeighborGracefulRestart{Enabled: true, RestartTimeSeconds: ptr.To[int32](120)},
			Families: []v2alpha1.CiliumBGPFamilyWithAdverts{{
				CiliumBGPFamily: v2alpha1.CiliumBGPFamily{Afi: afi, Safi: "unicast"},
				Advertisements:  &metav1.LabelSelector{MatchLabels: map[string]string{advertLabel: "lb"}},
			}},
		},
	}
	if authSecret != "" {
		pc.Spec.AuthSecretRef = ptr.To(authSecret)
	}
	return pc
}

// cleanupLeftovers removes what a killed run left: agents, FRR, the
// control plane, namespaces.
func cleanupLeftovers() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	var bins []string
	for _, d := range dirs {
		bins = append(bins, filepath.Join(d, "bin", "herald-agent"))
	}
	agentproc.KillStrays(bins...)
	for _, ns := range []string{prefix + "router"} {
		frr.KillInNetns(ns)
	}
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, clusterDirFile)); err == nil {
			suite.StopLeftoverCluster("bgp", strings.TrimSpace(string(b)))
		}
	}
	for _, err := range netlab.Cleanup(prefix) {
		fmt.Fprintln(os.Stderr, "bgp: cleaning up leftovers:", err)
	}
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}
