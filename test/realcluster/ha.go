package realcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/arpwatch"
	"github.com/heraldlb/herald/test/cgroups"
)

// An HA control plane, as kubeadm's stacked topology runs it: the first
// three nodes each run an etcd member and a kube-apiserver (in the node's
// namespaces and cgroup, beside its kubelet), and everything else reaches
// the API servers through ControlPlaneVIP: the kubelets, kube-proxy, the
// controller-manager and the scheduler (in the root namespace, on the LAN
// like a client) and the administrator's kubeconfig. What answers the VIP
// is the caller's business: HA.NodeFiles puts it on the nodes, as static
// Pods the kubelets start before any API server is up.

// HA configures an HA control plane.
type HA struct {
	// NodeFiles are written into each control-plane node before its
	// kubelet starts: path on the node → content (static Pods under
	// /etc/kubernetes/manifests, their configuration under /etc/herald).
	NodeFiles func(c *Cluster, n *Node) map[string][]byte
}

// ColdStart is what the start of an HA control plane measured: all three
// API servers started at once, with the VIP's owner already running.
type ColdStart struct {
	Started time.Time `json:"started"` // the API servers
	// FirstReady is when the first API server answered /readyz (polled
	// every 20 ms on the nodes' addresses), and which.
	FirstReady     time.Time `json:"firstReady"`
	FirstReadyNode string    `json:"firstReadyNode"`
	// FirstAnswer is when the VIP was first answered on the wire (ARP
	// every 20 ms from the client host), and with which MAC.
	FirstAnswer    time.Time `json:"firstAnswer"`
	FirstAnswerMAC string    `json:"firstAnswerMAC"`
}

// ControlPlaneNodes are the nodes that run the control plane.
func (c *Cluster) ControlPlaneNodes() []*Node {
	if !c.state.HA {
		return nil
	}
	return c.Nodes[:3]
}

const etcdClientPort, etcdPeerPort = 2379, 2380

func (c *Cluster) etcdMember(n *Node) daemon {
	var initial []string
	for _, m := range c.ControlPlaneNodes() {
		initial = append(initial, fmt.Sprintf("%s=http://%s", m.Name, net.JoinHostPort(m.IP.String(), strconv.Itoa(etcdPeerPort))))
	}
	client := fmt.Sprintf("http://%s,http://127.0.0.1:%d", net.JoinHostPort(n.IP.String(), strconv.Itoa(etcdClientPort)), etcdClientPort)
	peer := "http://" + net.JoinHostPort(n.IP.String(), strconv.Itoa(etcdPeerPort))
	return n.nodeDaemon("etcd", c.bin.etcd, "--name="+n.Name, "--data-dir="+filepath.Join(n.Dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster="+strings.Join(initial, ","), "--initial-cluster-state=new",
		"--listen-metrics-urls=", "--logger=zap", "--log-outputs=stderr")
}

// APIServer is a control-plane node's kube-apiserver: on every address of
// the node (the VIP's traffic arrives at the owner's), known to the
// cluster by the node's address, on its local etcd member.
func (c *Cluster) APIServer(n *Node) daemon {
	d := n.nodeDaemon("kube-apiserver", c.cp.apiserverArgv("0.0.0.0", n.IP, fmt.Sprintf("http://127.0.0.1:%d", etcdClientPort))...)
	return d
}

// upHA brings up an HA control plane with its nodes: etcd, then the
// kubelets (which start the static Pods), then the three API servers at
// once (measured: ColdStart), then the rest.
func (c *Cluster) upHA(ctx context.Context, o Options) error {
	o.Log("control plane: PKI")
	if err := c.ensurePKI(); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		o.Log("node %s: namespaces, containerd, %d images", n.Name, len(o.Images))
		if err := c.prepareNode(ctx, n, o); err != nil {
			return err
		}
		for _, img := range o.Images {
			if err := c.LoadImage(ctx, n, img); err != nil {
				return err
			}
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for _, n := range c.ControlPlaneNodes() {
		for path, content := range o.HA.NodeFiles(c, n) {
			if err := os.MkdirAll(filepath.Dir(n.HostPath(path)), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(n.HostPath(path), content, 0o600); err != nil {
				return err
			}
		}
		if err := c.etcdMember(n).start(); err != nil {
			return err
		}
	}
	for _, n := range c.ControlPlaneNodes() {
		if err := n.waitHTTP(cctx, c.etcdMember(n), fmt.Sprintf("http://127.0.0.1:%d/health", etcdClientPort)); err != nil {
			return err
		}
	}
	o.Log("etcd: 3 members")
	for _, n := range c.Nodes {
		if err := n.StartKubelet(cctx); err != nil {
			return err
		}
	}
	o.Log("kubelets up; starting the three API servers at once")
	cs, err := c.coldStart(cctx)
	if err != nil {
		return err
	}
	c.state.ColdStart, c.ColdStart = cs, cs
	if err := c.saveState(); err != nil {
		return err
	}
	o.Log("first API server ready (%s) %s after the start; the VIP answered %s after that (%s)",
		cs.FirstReadyNode, cs.FirstReady.Sub(cs.Started).Round(time.Millisecond), cs.FirstAnswer.Sub(cs.FirstReady).Round(time.Millisecond), cs.FirstAnswerMAC)
	for _, d := range []daemon{c.cp.controllerManager(), c.cp.scheduler()} {
		if err := d.start(); err != nil {
			return err
		}
	}
	if err := waitHealthy(cctx, c.cp.controllerManager(), fmt.Sprintf("https://127.0.0.1:%d/healthz", c.cp.kcmPort)); err != nil {
		return err
	}
	if err := waitHealthy(cctx, c.cp.scheduler(), fmt.Sprintf("https://127.0.0.1:%d/healthz", c.cp.schedPort)); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := n.StartKubeProxy(cctx); err != nil {
			return err
		}
	}
	if err := c.connect(); err != nil {
		return err
	}
	return c.waitNodesRegistered(ctx)
}

// coldStart starts the three API servers at once and measures when the
// first is ready and when the VIP is first answered.
func (c *Cluster) coldStart(ctx context.Context) (*ColdStart, error) {
	arp, err := arpwatch.OpenARPClient(c.ClientHost.Netns, c.ClientHost.IP)
	if err != nil {
		return nil, err
	}
	defer arp.Close()
	cs := &ColdStart{Started: time.Now()}
	for _, n := range c.ControlPlaneNodes() {
		if err := c.APIServer(n).start(); err != nil {
			return nil, err
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, n := range c.ControlPlaneNodes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := "https://" + net.JoinHostPort(n.IP.String(), strconv.Itoa(APIServerPort)) + "/readyz"
			for wctx.Err() == nil {
				if resp, err := client.Get(url); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						at := time.Now()
						mu.Lock()
						if cs.FirstReady.IsZero() || at.Before(cs.FirstReady) {
							cs.FirstReady, cs.FirstReadyNode = at, n.Name
						}
						mu.Unlock()
						return
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	for ctx.Err() == nil {
		res, err := arp.Probe(ControlPlaneVIP)
		if err == nil && len(res.Replies) > 0 {
			// Probe waits its window: the reply came when it was captured.
			cs.FirstAnswer, cs.FirstAnswerMAC = res.Replies[0].At, res.Replies[0].SHA.String()
			break
		}
	}
	wg.Wait()
	if cs.FirstAnswer.IsZero() || cs.FirstReady.IsZero() {
		return nil, fmt.Errorf("realcluster: the VIP %s was never answered (first API server ready: %v)", ControlPlaneVIP, cs.FirstReady)
	}
	return cs, nil
}

// KillAPIServer kills a control-plane node's kube-apiserver (SIGKILL).
func (c *Cluster) KillAPIServer(n *Node) error {
	d := c.APIServer(n)
	pid, ok := d.pid()
	if !ok {
		return fmt.Errorf("node %s: kube-apiserver does not run", n.Name)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	waitGone(pid, 10*time.Second)
	return nil
}

// StartAPIServer starts a control-plane node's kube-apiserver again.
func (c *Cluster) StartAPIServer(n *Node) error { return c.APIServer(n).start() }

// Signal sends sig to every process of the node (its cgroup: daemons,
// static Pods, containers): SIGSTOP freezes the node, SIGCONT thaws it.
func (n *Node) Signal(sig syscall.Signal) error {
	for _, pid := range cgroups.PIDs(n.Cgroup) {
		if err := syscall.Kill(pid, sig); err != nil && err != syscall.ESRCH {
			return err
		}
	}
	return nil
}

// Cut takes the node's LAN port off the bridge: links stay up on both
// sides, nothing passes. Heal plugs it back.
func (c *Cluster) Cut(n *Node) error  { return c.lanPort(n, "nomaster") }
func (c *Cluster) Heal(n *Node) error { return c.lanPort(n, "master", "br0") }

func (c *Cluster) lanPort(n *Node, args ...string) error {
	i := -1
	for j, m := range c.Nodes {
		if m == n {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("realcluster: no node %s", n.Name)
	}
	// netlab names the bridge ports p0, p1, ... in the order hosts were
	// added: the nodes first.
	argv := append([]string{"-n", Prefix + "lan", "link", "set", fmt.Sprintf("p%d", i)}, args...)
	return ipCmd(argv...)
}

// ProcessesWithArg returns the node's processes named comm whose command
// line has arg: one of two herald-agents.
func (n *Node) ProcessesWithArg(comm, arg string) []int {
	var out []int
	for _, pid := range n.Processes(comm) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains("\x00"+string(b), "\x00"+arg+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// VIPs of an HA cluster.
func VIPs() []netip.Addr { return []netip.Addr{ControlPlaneVIP, ControlPlaneVIP6} }

func ipCmd(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// APIServerReady reports whether a control-plane node's kube-apiserver
// answers /readyz on the node's address.
func (c *Cluster) APIServerReady(ctx context.Context, n *Node) bool {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(n.IP.String(), strconv.Itoa(APIServerPort))+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
