package realcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/heraldlb/herald/test/cgroups"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/netlab"
	"github.com/heraldlb/herald/test/realcluster/images"
)

// Options say what cluster to bring up.
type Options struct {
	// Nodes is the number of nodes (at least 1; 3 by default).
	Nodes int
	// SandboxImage is the pause image the runtimes use (it must be among
	// Images).
	SandboxImage string
	// Images are image tarballs (docker-archive) loaded into every node's
	// runtime: nothing can be pulled.
	Images []string
	// CNIConflist is the network configuration put into every node's
	// /etc/cni/net.d (nil: none; nodes are NotReady until one is there).
	CNIConflist []byte
	// Log receives progress lines (nil: none).
	Log func(format string, args ...any)
	// HA, when set, makes the first three nodes the control plane, behind
	// a VIP (see HA).
	HA *HA
	// MaxRestartPeriod caps the kubelets' back-off before they restart a
	// container that exited (0: the kubelet's own, which doubles from
	// 10 s to 5 minutes). A suite that kills a container on purpose, many
	// times, sets it (1 s at least) rather than wait minutes between
	// trials; it takes the kubelet's alpha gate KubeletCrashLoopBackOffMax
	// (Kubernetes 1.32 or later).
	MaxRestartPeriod time.Duration
	// KubeProxyMinSyncPeriod is kube-proxy's iptables.minSyncPeriod, the
	// least time between two syncs of its rules (0: kube-proxy's own
	// default, 1 s, as users run it). A shorter one shows how much of
	// "Service created -> first answer" is kube-proxy's wait.
	KubeProxyMinSyncPeriod time.Duration
}

// Cluster is a running cluster.
type Cluster struct {
	Dir        string
	Kubeconfig string // the administrator's (system:masters)
	Server     string
	RESTConfig *rest.Config
	Client     kubernetes.Interface
	Nodes      []*Node
	// ClientHost and RouterHost are hosts of the LAN without Kubernetes:
	// where a user's traffic comes from, and where a BGP router runs.
	ClientHost *netlab.Host
	RouterHost *netlab.Host
	Kubectl    string
	Helm       string
	// ColdStart is what the start of an HA cluster measured (nil: not HA).
	ColdStart *ColdStart

	p     paths
	bin   binaries
	cp    controlPlane
	state state
}

// state is what Down and Open need to know of a cluster that is up.
type state struct {
	Nodes     []string          `json:"nodes"`
	EtcdPort  int               `json:"etcdPort"`
	KCMPort   int               `json:"kcmPort"`
	SchedPort int               `json:"schedPort"`
	Sysctls   map[string]string `json:"sysctls"` // host values before the kubelets changed them
	HA        bool              `json:"ha,omitempty"`
	// HostDirs are the mount points Up created on the host (hostdirs.go).
	HostDirs []string `json:"hostDirs,omitempty"`
	// ColdStart is what an HA cluster's start measured.
	ColdStart *ColdStart `json:"coldStart,omitempty"`
}

// kubeletSysctls are the host-wide kernel settings every kubelet sets at
// start (it cannot set them per node). Down puts back what was there.
var kubeletSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// Open returns the cluster that is up in dir.
func Open(dir string) (*Cluster, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, p: paths{dir: dir}, bin: bin}
	b, err := os.ReadFile(c.p.state())
	if err != nil {
		return nil, fmt.Errorf("realcluster: no cluster in %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &c.state); err != nil {
		return nil, err
	}
	lan, err := newLAN()
	if err != nil {
		return nil, err
	}
	// The hosts are there already: only their addresses are needed.
	if err := c.load(lan); err != nil {
		return nil, err
	}
	if err := c.connect(); err != nil {
		return nil, err
	}
	return c, nil
}

// newLAN describes the cluster's LAN (Setup builds it).
func newLAN() (*netlab.LAN, error) {
	lan, err := netlab.New(Prefix, LAN)
	if err != nil {
		return nil, err
	}
	return lan, lan.EnableIPv6(LAN6)
}

// load fills in what follows from the state and the layout.
func (c *Cluster) load(lan *netlab.LAN) error {
	c.cp = controlPlane{p: c.p, bin: c.bin, apiAddr: lan.RootIP(), etcdPort: c.state.EtcdPort, kcmPort: c.state.KCMPort, schedPort: c.state.SchedPort}
	if c.state.HA {
		c.cp.apiAddr = ControlPlaneVIP
	}
	c.ColdStart = c.state.ColdStart
	c.Server = c.cp.server()
	c.Kubeconfig = c.p.adminKubeconfig()
	c.Kubectl, c.Helm = c.bin.kubectl, c.bin.helm
	c.Nodes = nil
	for i, name := range c.state.Nodes {
		h := lan.Host(name)
		ip, ip6 := hostAddr(LAN, 11+i), hostAddr(LAN6, 11+i)
		netns := Prefix + name
		if h != nil {
			ip, ip6, netns = h.IP, h.IP6, h.Netns
		}
		c.Nodes = append(c.Nodes, &Node{
			Name: name, IP: ip, IP6: ip6, Netns: netns, Dir: c.p.node(name),
			MountNS: c.p.mountNS(name), Cgroup: c.p.nodeCgroup(name),
			bin: c.bin, server: c.Server, pki: c.p.pki(),
		})
	}
	c.ClientHost = &netlab.Host{Name: ClientHost, Netns: Prefix + ClientHost, IP: hostAddr(LAN, clientN), IP6: hostAddr(LAN6, clientN)}
	c.RouterHost = &netlab.Host{Name: RouterHost, Netns: Prefix + RouterHost, IP: hostAddr(LAN, routerN), IP6: hostAddr(LAN6, routerN)}
	return nil
}

func hostAddr(p netip.Prefix, n int) netip.Addr {
	if p.Addr().Is4() {
		b := p.Addr().As4()
		b[3] = byte(n)
		return netip.AddrFrom4(b)
	}
	b := p.Addr().As16()
	b[15] = byte(n)
	return netip.AddrFrom16(b)
}

func (c *Cluster) saveState() error {
	b, err := json.MarshalIndent(c.state, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(c.p.state(), b, 0o644)
}

// prepareNode makes a node's cgroups, mount namespace and configuration,
// and starts its containerd.
func (c *Cluster) prepareNode(ctx context.Context, n *Node, o Options) error {
	if err := cgroups.Ensure(n.Cgroup + "/system"); err != nil {
		return err
	}
	if err := n.setupMounts(c.p.nsDir()); err != nil {
		return err
	}
	if err := n.writeConfigs(o); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return n.StartContainerd(cctx)
}

// LoadImage imports an image tarball into a node's runtime, where the
// kubelet finds it.
func (c *Cluster) LoadImage(ctx context.Context, n *Node, tarball string) error {
	if err := images.Load(ctx, c.bin.ctr, n.ContainerdSocket(), tarball); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	return nil
}

func (c *Cluster) waitNodesRegistered(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		nodes, err := c.Client.CoreV1().Nodes().List(cctx, metav1.ListOptions{})
		if err == nil && len(nodes.Items) == len(c.Nodes) {
			return nil
		}
		select {
		case <-cctx.Done():
			return fmt.Errorf("realcluster: nodes did not register: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// WaitNodesReady waits until every Node is Ready.
func (c *Cluster) WaitNodesReady(ctx context.Context) error {
	for {
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		ready := 0
		var why []string
		if err == nil {
			for _, n := range nodes.Items {
				for _, cond := range n.Status.Conditions {
					if cond.Type == corev1.NodeReady {
						if cond.Status == corev1.ConditionTrue {
							ready++
						} else {
							why = append(why, n.Name+": "+cond.Message)
						}
					}
				}
			}
		}
		if ready == len(c.Nodes) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("realcluster: %d of %d nodes Ready (%v; %s)", ready, len(c.Nodes), err, strings.Join(why, "; "))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Node returns a node by name (nil if none).
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// freePorts finds n consecutive free TCP ports on 127.0.0.1 and returns
// the first.
func freePorts(n int) (int, error) {
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		first := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := true
		for i := 1; i < n; i++ {
			l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(first+i))
			if err != nil {
				ok = false
				break
			}
			l2.Close()
		}
		if ok {
			return first, nil
		}
	}
	return 0, errors.New("realcluster: no free ports on 127.0.0.1")
}

// RepoRoot is the root of Herald's source tree.
func RepoRoot() string { return cluster.RepoRoot() }

// routeServices turns IPv6 on for the node's new devices and gives it
// routes to the ClusterIP ranges. A node needs
// a route to a ClusterIP for kube-proxy's NAT to see its packets at all;
// real nodes have a default route, these only the LAN (nothing may leave
// the machine), so the ranges go via the control plane's address (IPv6:
// on the LAN). kube-proxy rewrites every packet to a Service with
// endpoints before it is sent.
//
// The control plane's host is no node: it has no routes to the pods, and
// its default route leaves the machine. So a node masquerades what it
// forwards from elsewhere (its pods) to the control plane, as a CNI that
// masquerades traffic leaving the pod network does: a pod that talks to
// the API server (MetalLB's controller, through the kubernetes Service)
// gets its answers, and no answer to a pod address is ever sent off the
// machine.
func routeServices(netns string, via netip.Addr) error {
	// New devices (the pods' bridge and veths) get IPv6, as on any host;
	// the LAN keeps its quiet eth0 (no router solicitations, no DAD).
	if out, err := exec.Command("ip", "netns", "exec", netns, "sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=0").CombinedOutput(); err != nil {
		return fmt.Errorf("sysctl in %s: %w: %s", netns, err, bytes.TrimSpace(out))
	}
	for _, args := range [][]string{
		{"-n", netns, "route", "replace", ServiceCIDR.String(), "via", via.String()},
		{"-n", netns, "-6", "route", "replace", ServiceCIDR6.String(), "dev", "eth0"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %v: %w: %s", args, err, bytes.TrimSpace(out))
		}
	}
	masq := []string{"netns", "exec", netns, "iptables", "-w", "-t", "nat", "-A", "POSTROUTING",
		"!", "-s", LAN.String(), "-d", netip.PrefixFrom(via, 32).String(), "-o", "eth0", "-j", "MASQUERADE"}
	if out, err := exec.Command("ip", masq...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %v: %w: %s", masq, err, bytes.TrimSpace(out))
	}
	return nil
}

// fenceServiceRanges adds (op "add") or removes ("del") unreachable routes
// for the ClusterIP ranges in this machine's own namespace, where the
// control plane runs. It has no kube-proxy, so nothing rewrites a packet
// it sends to a ClusterIP (to a webhook or an aggregated API behind a
// Service), and without these routes such a packet would leave by the
// machine's default route.
func fenceServiceRanges(op string) error {
	var errs []error
	for _, r := range []netip.Prefix{ServiceCIDR, ServiceCIDR6} {
		out, err := exec.Command("ip", "route", op, "unreachable", r.String()).CombinedOutput()
		if err != nil && !(op == "del" && bytes.Contains(out, []byte("No such process"))) {
			errs = append(errs, fmt.Errorf("ip route %s unreachable %s: %w: %s", op, r, err, bytes.TrimSpace(out)))
		}
	}
	return errors.Join(errs...)
}
