package realcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/frr"
)

// The cluster's BGP router: FRR (test/frr) in the router host's namespace,
// in AS RouterASN, peering with every node (AS NodeASN) over IPv4 with
// ECMP, IPv4 and IPv6 routes on the same sessions (multiprotocol BGP: the
// nodes name their IPv6 address on the LAN as next hop of IPv6 routes);
// and the BGP resources a user writes for it. The e2e suite's BGP
// test and `make demo` (herald-realcluster router) both use them.
const (
	RouterASN = 65000
	NodeASN   = 65001
	// RoutedPool and RoutedPool6 are a LoadBalancer pool off the LAN:
	// only BGP brings its IPs to the router. The pool takes the Services
	// labelled bgp=yes.
	RoutedPool  = "198.18.17.0/24"
	RoutedPool6 = "fd00:18:17::/120"
)

// RouterConfig is the router's bgpd configuration.
func (c *Cluster) RouterConfig() string {
	var conf strings.Builder
	fmt.Fprintf(&conf, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n", RouterASN, c.RouterHost.IP)
	for _, n := range c.Nodes {
		fmt.Fprintf(&conf, " neighbor %s remote-as %d\n neighbor %s timers connect 1\n", n.IP, NodeASN, n.IP)
	}
	conf.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n")
	for _, n := range c.Nodes {
		fmt.Fprintf(&conf, "  neighbor %s activate\n", n.IP)
	}
	conf.WriteString(" exit-address-family\n address-family ipv6 unicast\n  maximum-paths 8\n")
	for _, n := range c.Nodes {
		fmt.Fprintf(&conf, "  neighbor %s activate\n", n.IP)
	}
	conf.WriteString(" exit-address-family\n")
	return conf.String()
}

// StartRouter starts the router with its work directory (sockets,
// configuration, logs) in dir.
func (c *Cluster) StartRouter(dir string) (*frr.Router, error) {
	return frr.Start(frr.Options{Netns: c.RouterHost.Netns, Dir: dir, Name: "tor", Config: c.RouterConfig()})
}

// BGPFixtures are the BGP resources as a user writes them (Cilium's BGP
// control plane API): every node peers with the router over IPv4 and
// advertises the IPv4 and IPv6 IPs of the Services labelled bgp=yes, which
// get them from RoutedPool and RoutedPool6.
func (c *Cluster) BGPFixtures() string {
	return fmt.Sprintf(`apiVersion: cilium.io/v2alpha1
kind: CiliumLoadBalancerIPPool
metadata: {name: routed}
spec:
  blocks: [{cidr: %s}, {cidr: "%s"}]
  serviceSelector: {matchLabels: {bgp: "yes"}}
---
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPClusterConfig
metadata: {name: tor}
spec:
  bgpInstances:
  - name: main
    localASN: %d
    peers:
    - name: tor
      peerAddress: %s
      peerASN: %d
      peerConfigRef: {name: tor}
---
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPPeerConfig
metadata: {name: tor}
spec:
  timers: {connectRetryTimeSeconds: 1, holdTimeSeconds: 9, keepAliveTimeSeconds: 3}
  families:
  - afi: ipv4
    safi: unicast
    advertisements: {matchLabels: {advertise: lb}}
  - afi: ipv6
    safi: unicast
    advertisements: {matchLabels: {advertise: lb}}
---
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPAdvertisement
metadata:
  name: lb
  labels: {advertise: lb}
spec:
  advertisements:
  - advertisementType: Service
    service: {addresses: [LoadBalancerIP]}
    selector: {matchLabels: {bgp: "yes"}}
`, RoutedPool, RoutedPool6, NodeASN, c.RouterHost.IP, RouterASN)
}

// RouterPIDFile is where a process that keeps the router running
// (herald-realcluster router) writes its pid, so that Down stops it.
func RouterPIDFile(dir string) string { return filepath.Join(dir, "router.pid") }

// stopRouter ends the process that keeps the router running (SIGTERM: it
// stops FRR), then kills any FRR daemon left in the router's namespace.
func stopRouter(dir string) {
	if b, err := os.ReadFile(RouterPIDFile(dir)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 && isRouterProcess(pid) {
			if syscall.Kill(pid, syscall.SIGTERM) == nil {
				for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil; {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
		_ = os.Remove(RouterPIDFile(dir))
	}
	frr.KillInNetns(Prefix + RouterHost)
}

// isRouterProcess: pid is (still) herald-realcluster router, not another
// process that got its number after it died.
func isRouterProcess(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args := strings.Split(string(cmdline), "\x00")
	return err == nil && len(args) > 1 && filepath.Base(args[0]) == "herald-realcluster" && args[1] == "router"
}
