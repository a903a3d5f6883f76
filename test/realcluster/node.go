package realcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/heraldlb/herald/test/cgroups"
	"github.com/heraldlb/herald/test/pki"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A node is a network namespace on the LAN with a mount namespace of its
// own, in which its containerd, kubelet and kube-proxy run with the paths
// of a real node: /var/lib/kubelet, /run/containerd, /etc/cni/net.d,
// /opt/cni/bin, /run/herald, /var/lib/herald, ... are the node's own
// directories (bound from under its directory), /sys is a sysfs of the
// node's network namespace (with the host's cgroup hierarchies), and
// /sys/fs/bpf is a bpffs of its own. So a DaemonSet's hostPath volumes are
// per node, as on separate machines. Everything else (/usr, /etc, /proc)
// is the host's.

// Node is one node of the cluster.
type Node struct {
	Name  string
	IP    netip.Addr
	IP6   netip.Addr
	Netns string // network namespace name (ip netns)
	Dir   string // its directory: roots of its paths, configs, logs
	// MountNS is the file of its mount namespace (nsenter --mount=).
	MountNS string
	// Cgroup is its subtree in every cgroup v1 hierarchy (test/cgroups):
	// the kubelet's cgroupRoot, with its pods below, and <Cgroup>/system
	// for its daemons (containerd and its shims, the kubelet, kube-proxy).
	// Tearing the node down kills what is left in the subtree and removes it.
	Cgroup string

	bin    binaries
	server string
	pki    pki.Dir
}

// nodePaths are the host paths a node has of its own. containerd writes
// to /opt/containerd too (its opt plugin), even with nothing to install.
var nodePaths = []string{
	"/var/lib/kubelet", "/var/lib/containerd", "/run/containerd", "/etc/containerd", "/opt/containerd",
	"/etc/cni/net.d", "/opt/cni/bin", "/var/lib/cni", "/run/netns",
	"/var/log/pods", "/var/log/containers", "/etc/kubernetes",
	"/run/herald", "/var/lib/herald", "/etc/herald",
}

func (n *Node) root(p string) string { return filepath.Join(n.Dir, "root", p) }
func (n *Node) netnsPath() string    { return "/var/run/netns/" + n.Netns }

// ContainerdSocket is its containerd's socket as seen from the host.
func (n *Node) ContainerdSocket() string { return n.root("/run/containerd/containerd.sock") }

// HostPath is where one of the node's own paths (e.g. /var/lib/herald)
// lies on the host.
func (n *Node) HostPath(p string) string {
	for _, np := range nodePaths {
		if p == np || strings.HasPrefix(p, np+"/") {
			return n.root(p)
		}
	}
	if strings.HasPrefix(p, "/var/run/") {
		return n.HostPath("/run/" + strings.TrimPrefix(p, "/var/run/"))
	}
	return p
}

// setupMounts creates the node's mount namespace (a slave of the host's:
// mounts made inside stay inside) and makes its paths its own.
func (n *Node) setupMounts(nsDir string) error {
	for _, p := range nodePaths {
		// The mount point on the host is recordHost's (hostdirs.go).
		if err := os.MkdirAll(n.root(p), 0o755); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(n.Dir, "stash"), 0o755); err != nil {
		return err
	}
	if err := privateDir(nsDir); err != nil {
		return err
	}
	if err := os.WriteFile(n.MountNS, nil, 0o644); err != nil {
		return err
	}
	if out, err := exec.Command("unshare", "--mount="+n.MountNS, "--propagation", "slave", "true").CombinedOutput(); err != nil {
		return fmt.Errorf("node %s: unshare: %w: %s", n.Name, err, bytes.TrimSpace(out))
	}
	var script strings.Builder
	stash := filepath.Join(n.Dir, "stash")
	// A sysfs mounted from inside the node's network namespace shows that
	// namespace's devices (what ip netns exec does too); it hides the
	// cgroup hierarchies mounted under /sys, so they are bound back.
	fmt.Fprintf(&script, "set -e\nmount --rbind %s %s\nmount -t sysfs sysfs /sys\nmount --rbind %s %s\numount -l %s\n",
		cgroups.Root, stash, stash, cgroups.Root, stash)
	script.WriteString("mount -t bpf bpf /sys/fs/bpf\n")
	for _, p := range nodePaths {
		fmt.Fprintf(&script, "mount --bind %s %s\n", n.root(p), p)
	}
	// As on a host with systemd: mounts propagate within the node (the
	// kubelet's volumes to its containers, a bpffs to the agent's
	// HostToContainer volume).
	script.WriteString("mount --make-rshared /\n")
	return n.inNode(script.String())
}

// inNode runs a shell script in the node's mount and network namespaces.
func (n *Node) inNode(script string) error {
	out, err := exec.Command("nsenter", "--mount="+n.MountNS, "--net="+n.netnsPath(), "--", "sh", "-c", script).CombinedOutput()
	if err != nil {
		return fmt.Errorf("node %s: %w: %s", n.Name, err, bytes.TrimSpace(out))
	}
	return nil
}

// Exec runs a command on the node (its mount and network namespaces) and
// returns its output.
func (n *Node) Exec(ctx context.Context, argv ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--mount=" + n.MountNS, "--net=" + n.netnsPath(), "--"}, argv...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("node %s: %s: %w: %s", n.Name, strings.Join(argv, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// privateDir makes dir a private mount of its own: the namespace files
// unshare binds there must not propagate (the kernel refuses otherwise).
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if mounted(dir) {
		return nil
	}
	for _, args := range [][]string{{"--bind", dir, dir}, {"--make-private", dir}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("mount %v: %w: %s", args, err, bytes.TrimSpace(out))
		}
	}
	return nil
}

// mounted reports whether path is a mount point of the caller's namespace.
func mounted(path string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}

// writeConfigs writes the node's containerd, kubelet and kube-proxy
// configurations and installs the reference CNI plugins (the cluster's
// network plugin, bridge, and loopback, which containerd uses for every
// pod's lo) into its /opt/cni/bin.
func (n *Node) writeConfigs(o Options) error {
	files := map[string]string{
		n.root("/etc/containerd/config.toml"):   containerdConfig(o.SandboxImage),
		filepath.Join(n.Dir, "kubelet.yaml"):    kubeletConfig(n, o.MaxRestartPeriod),
		filepath.Join(n.Dir, "kube-proxy.yaml"): kubeProxyConfig(n, o.KubeProxyMinSyncPeriod),
		filepath.Join(n.Dir, "resolv.conf"):     "nameserver 127.0.0.1\n",
	}
	if o.CNIConflist != nil {
		files[n.root("/etc/cni/net.d/10-herald.conflist")] = string(o.CNIConflist)
	}
	if err := os.MkdirAll(n.root("/etc/kubernetes/manifests"), 0o755); err != nil {
		return err
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, plugin := range []string{"bridge", "loopback", "host-local"} {
		if err := copyFile(filepath.Join(n.bin.cniPlugins, plugin), n.root("/opt/cni/bin/"+plugin), 0o755); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// The node's daemons: each runs in the node's namespaces and in
// <Cgroup>/system.
func (n *Node) nodeDaemon(name string, argv ...string) daemon {
	return daemon{name: name, dir: filepath.Join(n.Dir, "logs"), argv: argv,
		mountNS: n.MountNS, netNS: n.netnsPath(), cgroup: n.Cgroup + "/system"}
}

// Containerd is the node's container runtime.
func (n *Node) Containerd() daemon {
	return n.nodeDaemon("containerd", n.bin.containerd, "--config=/etc/containerd/config.toml")
}

// Kubelet is the node's kubelet.
func (n *Node) Kubelet() daemon {
	return n.nodeDaemon("kubelet", n.bin.kubelet,
		"--config="+filepath.Join(n.Dir, "kubelet.yaml"),
		"--kubeconfig="+filepath.Join(n.Dir, "kubelet.kubeconfig"),
		"--hostname-override="+n.Name,
		"--node-ip="+n.IP.String()+","+n.IP6.String(),
		"--v=1")
}

// KubeProxy is the node's kube-proxy.
func (n *Node) KubeProxy() daemon {
	return n.nodeDaemon("kube-proxy", n.bin.kubeProxy, "--config="+filepath.Join(n.Dir, "kube-proxy.yaml"), "--v=1")
}

func (n *Node) daemons() []daemon { return []daemon{n.Containerd(), n.Kubelet(), n.KubeProxy()} }

// StartContainerd starts the node's containerd and waits until its CRI
// service answers: the socket accepts connections before the CRI plugin
// has initialized, and a kubelet started then exits ("server is not
// initialized yet").
func (n *Node) StartContainerd(ctx context.Context) error {
	d := n.Containerd()
	if err := d.start(); err != nil {
		return err
	}
	for {
		if criReady(ctx, n.ContainerdSocket()) == nil {
			return nil
		}
		if _, ok := d.pid(); !ok {
			return fmt.Errorf("node %s: containerd exited:\n%s", n.Name, tailFile(d.Log(), 30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: containerd does not answer on %s:\n%s", n.Name, n.ContainerdSocket(), tailFile(d.Log(), 30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// kubeletStarts is how often StartKubelet starts a kubelet that exits
// before it is healthy.
const kubeletStarts = 3

// StartKubelet starts the node's kubelet and waits for its /healthz. A
// kubelet that exits on its way there is started again, as systemd's
// Restart= does for the kubelet unit of a production node: kubelet v1.34
// can die at start of a race of its own ("concurrent map iteration and
// map write" in the container manager's capacity, read by the DRA plugin
// manager while the container manager starts, the more likely while no
// API server answers yet); each exit stays in its log.
func (n *Node) StartKubelet(ctx context.Context) error {
	d := n.Kubelet()
	var err error
	for range kubeletStarts {
		if err = d.start(); err != nil {
			return err
		}
		if err = n.waitHTTP(ctx, d, "http://127.0.0.1:10248/healthz"); !errors.Is(err, errExited) {
			return err
		}
	}
	return err
}

// StartKubeProxy starts the node's kube-proxy and waits for its /healthz.
func (n *Node) StartKubeProxy(ctx context.Context) error {
	d := n.KubeProxy()
	if err := d.start(); err != nil {
		return err
	}
	return n.waitHTTP(ctx, d, "http://"+net.JoinHostPort(n.IP.String(), "10256")+"/healthz")
}

// errExited: the daemon waited for is gone.
var errExited = errors.New("exited")

// waitHTTP polls a URL on the node (from inside its network namespace)
// until it answers 200.
func (n *Node) waitHTTP(ctx context.Context, d daemon, url string) error {
	for {
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", n.Netns, "curl", "-fsS", "--max-time", "2", "-o", "/dev/null", url).CombinedOutput()
		if err == nil {
			return nil
		}
		if _, ok := d.pid(); !ok {
			return fmt.Errorf("node %s: %s %w:\n%s", n.Name, d.name, errExited, tailFile(d.Log(), 30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: %s not healthy at %s: %s\n%s", n.Name, d.name, url, bytes.TrimSpace(out), tailFile(d.Log(), 30))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Start starts containerd, the kubelet and kube-proxy (those that do not
// run).
func (n *Node) Start(ctx context.Context) error {
	if err := n.StartContainerd(ctx); err != nil {
		return err
	}
	if err := n.StartKubelet(ctx); err != nil {
		return err
	}
	return n.StartKubeProxy(ctx)
}

// teardown stops everything of the node and removes what it made: its
// processes (containers included, found by cgroup and by mount
// namespace), cgroups and mount namespace. Its network namespace goes with the LAN.
func (n *Node) teardown() error {
	var errs []error
	for _, d := range n.daemons() {
		if err := d.stop(5 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if err := cgroups.Kill(n.Cgroup, 30*time.Second); err != nil {
		errs = append(errs, err)
	}
	// A second net: whatever runs in the node's mount namespace goes too,
	// should it have left the node's cgroups.
	if err := killMountNS(n.MountNS, 30*time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := cgroups.Remove(n.Cgroup, 10*time.Second); err != nil {
		errs = append(errs, err)
	}
	if mounted(n.MountNS) {
		if out, err := exec.Command("umount", n.MountNS).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("umount %s: %w: %s", n.MountNS, err, bytes.TrimSpace(out)))
		}
	}
	return errors.Join(errs...)
}

// MAC is the hardware address of the node's LAN interface (eth0): what
// it answers ARP with.
func (n *Node) MAC() (net.HardwareAddr, error) {
	out, err := exec.Command("ip", "-n", n.Netns, "-o", "link", "show", "eth0").Output()
	if err != nil {
		return nil, fmt.Errorf("node %s: eth0: %w", n.Name, err)
	}
	f := strings.Fields(string(out))
	for i := range f[:len(f)-1] {
		if f[i] == "link/ether" {
			return net.ParseMAC(f[i+1])
		}
	}
	return nil, fmt.Errorf("node %s: no MAC address on eth0: %s", n.Name, out)
}

// Processes returns the ids of the node's processes named comm (the
// kernel's name, at most 15 characters), containers included: its cgroup
// subtree holds them all.
func (n *Node) Processes(comm string) []int {
	var out []int
	for _, pid := range cgroups.PIDs(n.Cgroup) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err == nil && strings.TrimSpace(string(b)) == comm {
			out = append(out, pid)
		}
	}
	return out
}

// Stop stops one of the node's daemons ("containerd", "kubelet",
// "kube-proxy") with SIGTERM, as systemctl stop would. containerd's shims,
// and the containers under them, run on.
func (n *Node) Stop(name string) error {
	for _, d := range n.daemons() {
		if d.name == name {
			return d.stop(10 * time.Second)
		}
	}
	return fmt.Errorf("node %s has no daemon %s", n.Name, name)
}

// criReady asks the CRI runtime service on socket for its status.
func criReady(ctx context.Context, socket string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = runtimeapi.NewRuntimeServiceClient(conn).Status(ctx, &runtimeapi.StatusRequest{})
	return err
}
