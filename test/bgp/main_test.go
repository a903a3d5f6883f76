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
// (AS 65001) over IPv4 and IPv6 (IPv6 routes over either), maximum-paths 8 (across AS numbers
// too), graceful restart, and
// bfdd with a BFD profile the BFD tests turn on per neighbor. It
// creates the Node objects (no kubelet runs), an LB IPAM pool and the BGP
// resources every test shares:
//
//   - CiliumBGPClusterConfig hbgp (nodes labelled hbgp.test/bgp=main):
//     instance main, AS 65001, peers tor4 (198.18.44.2) and tor6
//     (fd00:18:0:44::2), peer configs hbgp-v4 and hbgp-v6;
//   - the peer configs: one family each, advertisements labelled
//     hbgp.test/advertise=lb, short timers and graceful restart;
//   - CiliumBGPAdvertisement hbgp-lb: LoadBalancer IPs of Services
//     labelled hbgp.test/bgp=yes, and of those labelled
//     hbgp.test/bgp=aggregate as their /24 or /120, and the addresses of
//     the device hbgp-vips where a node has one.
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
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	prefix        = "hbgp-"
	routerASN     = 65000
	nodeASN       = 65001
	routerHostNum = 2
	poolName      = "hbgp-pool"
	podPoolName   = "hbgp-green"
	podPoolCIDR   = "198.18.48.0/24"
	secretsNS     = "kube-system"

	// The shared BGP resources.
	clusterConfigName = "hbgp"
	peerConfigV4      = "hbgp-v4"
	peerConfigV6      = "hbgp-v6"
	advertName        = "hbgp-lb"
	bgpNodeLabel      = "hbgp.test/bgp"
	advertLabel       = "hbgp.test/advertise"
	serviceLabel      = "hbgp.test/bgp"
	vipsDevice        = "hbgp-vips"
)

var (
	nodeNames = []string{"node1", "node2", "node3"}
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
	suite.Main(m, "network namespaces, FRR", suite.Options{Name: "bgp", Prefix: prefix, Subnet: subnet,
		LAN:   func(l *netlab.LAN) error { return l.EnableIPv6(subnet6) },
		Hosts: nodeNames, Namespace: metav1.NamespaceSystem,
		Leftovers: func() { frr.KillInNetns(prefix + "router") }}, setup)
}

func atTeardown(f func()) { teardown.Add(f) }

// routerConfig is FRR's bgpd configuration: every node a neighbor over
// IPv4 (ipv4 and ipv6 unicast) and IPv6 (ipv6 unicast), ECMP across them, graceful
// restart (FRR keeps a restarting node's routes, marked stale). ECMP spans
// nodes of different AS numbers too (multipath-relax: by default FRR
// joins only paths of the same AS path), for TestLocalASNPeering.
func routerConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n bgp graceful-restart\n", routerASN, routerHost.IP)
	b.WriteString(" bgp bestpath as-path multipath-relax\n")
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
		// IPv6 over the IPv4 sessions too, for the peers whose peer
		// config lists ipv6 (TestIPv6OverIPv4Session).
		fmt.Fprintf(&b, "  neighbor %s activate\n  neighbor %s activate\n", n.host.IP6, n.host.IP)
	}
	b.WriteString(" exit-address-family\n")
	return b.String()
}

func setup(env *suite.Env) error {
	var err error
	teardown, workDir, lan = env.Teardown, env.Work, env.LAN
	testCluster, kube, herald = env.Cluster, env.Cluster.Client, env.Herald
	if routerHost, err = lan.Add("router", routerHostNum); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	for _, name := range nodeNames {
		h := lan.Host(name)
		nodes = append(nodes, &node{host: h, Agent: agentproc.New(agentproc.Options{
			Name: name, Netns: h.Netns, Dir: filepath.Join(workDir, name),
			AgentBin: env.AgentBin, DbgBin: env.DbgBin, Kubeconfig: testCluster.Kubeconfig, Namespace: metav1.NamespaceSystem,
			MetricsAddr: h.IP.String() + ":9962",
			Args: []string{"--enable-bgp-control-plane", "--enable-ipv6", "--bgp-secrets-namespace", secretsNS,
				// Multi-pool IPAM, so that nodes hold CIDRs of a pod pool to
				// advertise: each asks for 4 addresses of it at start.
				"--ipam=multi-pool", "--ipam-multi-pool-pre-allocation=" + podPoolName + "=4",
				"--ipam-socket=" + filepath.Join(workDir, name, "ipam.sock"), "--ipam-state-dir=" + filepath.Join(workDir, name, "ipam-state"),
				// Most of the suite's Services have no EndpointSlice (no
				// kube-controller-manager runs): they stay advertised, as
				// before Herald withdrew Services without a ready endpoint.
				// TestWithdrawnWithoutReadyEndpoint restarts the agents
				// with the default.
				"--enable-no-service-endpoints-routable"},
		})})
	}

	router, err = frr.Start(frr.Options{Netns: routerHost.Netns, Dir: filepath.Join(workDir, "frr"), Name: "tor", Config: routerConfig(),
		BFD: true, BFDConfig: bfdProfileConfig})
	if err != nil {
		return fmt.Errorf("starting FRR: %w", err)
	}
	atTeardown(func() { _ = router.Stop() })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i, n := range nodes {
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{"kubernetes.io/hostname": n.Name, bgpNodeLabel: "main"}},
			Spec: corev1.NodeSpec{PodCIDRs: podCIDRs(i)}}
		if err := env.CreateNode(ctx, obj, n.host.IP, n.host.IP6); err != nil {
			return err
		}
	}
	if err := createSharedResources(ctx, env); err != nil {
		return err
	}

	if err := env.StartAgents(agents()...); err != nil {
		return err
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
func createSharedResources(ctx context.Context, env *suite.Env) error {
	c := herald.CiliumV2alpha1()
	if err := env.CreateLBPool(ctx, poolName, poolCIDR, poolCIDR6); err != nil {
		return err
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
		}, {
			// TestAggregation's Services: their /24 and /120.
			AdvertisementType: v2alpha1.BGPServiceAdvert,
			Service: &v2alpha1.BGPServiceOptions{Addresses: []v2alpha1.BGPServiceAddressType{v2alpha1.BGPLoadBalancerIPAddr},
				AggregationLengthIPv4: ptrTo[int16](24), AggregationLengthIPv6: ptrTo[int16](120)},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{serviceLabel: "aggregate"}},
		}, {
			// TestInterface's device, on the nodes that have it.
			AdvertisementType: v2alpha1.BGPInterfaceAdvert,
			Interface:         &v2alpha1.BGPInterfaceOptions{Name: vipsDevice},
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
