package realcluster

import (
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/heraldlb/herald/test/pki"
)

// Addresses and names of the cluster. Everything is in 198.18.0.0/15 and
// fd00::/8, named hrc-*: nothing is sent anywhere else, and nothing clashes
// with the other suites' LANs.
var (
	// LAN is the nodes' segment: the control plane binds to its .1 in the
	// root namespace, nodes are .11 upwards, the client .100, the BGP router
	// .254.
	LAN  = netip.MustParsePrefix("198.18.16.0/24")
	LAN6 = netip.MustParsePrefix("fd00:18:16::/64")
	// ServiceCIDRs are the ClusterIP ranges; the API server's "kubernetes"
	// Service is the first address of the IPv4 one.
	ServiceCIDR  = netip.MustParsePrefix("198.18.20.0/24")
	ServiceCIDR6 = netip.MustParsePrefix("fd00:18:20::/112")
	// ControlPlaneVIP and ControlPlaneVIP6 are the API servers' VIPs of an
	// HA cluster (Options.HA): on the LAN, owned by no host, outside the
	// LoadBalancer pools the suites use.
	ControlPlaneVIP  = hostAddr(LAN, 250)
	ControlPlaneVIP6 = hostAddr(LAN6, 250)
)

const (
	// Prefix names the network namespaces, interfaces and cgroups.
	Prefix = "hrc-"
	// APIServerPort is kube-apiserver's secure port on the LAN's .1.
	APIServerPort = 6443
	// ClientHost and RouterHost are the LAN's client and BGP router.
	ClientHost = "client"
	RouterHost = "router"
	clientN    = 100
	routerN    = 254
)

// NodeNames are the nodes' names, node1 upwards.
func NodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("node%d", i+1)
	}
	return out
}

// paths of a cluster directory.
type paths struct{ dir string }

func (p paths) pki() pki.Dir                  { return pki.Dir(filepath.Join(p.dir, "pki")) }
func (p paths) controlPlane() string          { return filepath.Join(p.dir, "control-plane") }
func (p paths) node(name string) string       { return filepath.Join(p.dir, "nodes", name) }
func (p paths) state() string                 { return filepath.Join(p.dir, "state.json") }
func (p paths) kubeconfig(who string) string  { return filepath.Join(p.dir, "kubeconfig", who) }
func (p paths) mountNS(node string) string    { return filepath.Join(p.dir, "ns", node+".mnt") }
func (p paths) nsDir() string                 { return filepath.Join(p.dir, "ns") }
func (p paths) adminKubeconfig() string       { return p.kubeconfig("admin") }
func (p paths) nodeCgroup(node string) string { return "/" + Prefix + node }
