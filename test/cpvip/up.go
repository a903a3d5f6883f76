package cpvip

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/netlab"
	"github.com/heraldlb/herald/test/pki"
	"github.com/heraldlb/herald/test/suite"
)

// Options configure Up.
type Options struct {
	// StartAgents starts herald-agent control-plane-vip on every node once
	// the LAN is up, before etcd and the API servers (the agents serve an
	// API server that is not up yet).
	StartAgents bool
	// AgentBin is herald-agent; empty: Up builds it (agentproc.Build) when
	// StartAgents is set or a test calls StartAgent later.
	AgentBin string
	// DbgBin is herald-dbg, for CPNode.Dbg; Up sets it when it builds
	// the agent.
	DbgBin string
	// AgentArgs are added to every agent's command line, after the
	// harness's, replacing the flags they set again.
	AgentArgs []string
	// KubeVersion is kube-apiserver's version (cluster.Versions); empty:
	// $HERALD_KUBE_VERSION, else cluster.KubeVersion.
	KubeVersion string
}

// ControlPlane is a running three-node control plane on a test LAN.
type ControlPlane struct {
	Dir    string // the run's work directory
	LAN    *netlab.LAN
	Nodes  []*CPNode    // cp1, cp2, cp3
	Client *netlab.Host // the observers' host
	// Kubeconfig and Kubeconfig6 are admin kubeconfigs whose server is
	// the IPv4 or IPv6 VIP, for clients in the client's namespace.
	Kubeconfig, Kubeconfig6 string
	// PeerSecretFile is the agents' shared --peer-secret-file.
	PeerSecretFile string
	// KeepLogs makes Down copy the daemons' logs to a directory of their
	// own (printed on stderr) before it removes the work directory: set
	// it when a test failed.
	KeepLogs bool

	opts         Options
	pki          pki.Dir
	caPool       *x509.CertPool // the CA, for clients of the API servers
	etcdBin      string
	apiserverBin string

	unlock   func()
	sigs     chan os.Signal
	downOnce sync.Once
}

// Up takes the harness's lock, removes what an interrupted run left, and
// brings up the LAN, the three etcd members, the three API servers and,
// with Options.StartAgents, the agents. It returns once every API server is
// ready. On error it has torn down what it built.
func Up(ctx context.Context, o Options) (*ControlPlane, error) {
	version := o.KubeVersion
	if version == "" {
		version = os.Getenv(cluster.EnvKubeVersion)
	}
	if version == "" {
		version = cluster.KubeVersion
	}
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("cpvip: etcd is missing: run make tools")
	}
	cp := &ControlPlane{opts: o, etcdBin: etcdBin, apiserverBin: cluster.ApiserverPath(version)}
	if _, err := os.Stat(cp.apiserverBin); err != nil {
		return nil, fmt.Errorf("cpvip: %s is missing: run make tools", cp.apiserverBin)
	}
	if cp.unlock, err = netlab.Lock(LockName); err != nil {
		return nil, err
	}
	cleanupLeftovers()
	// Ctrl-C tears down too; the processes would die with us anyway, the
	// namespaces and mounts would not.
	cp.sigs = make(chan os.Signal, 1)
	signal.Notify(cp.sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if _, ok := <-cp.sigs; ok {
			cp.Down()
			os.Exit(1)
		}
	}()
	if err := cp.up(ctx); err != nil {
		err = fmt.Errorf("cpvip: %w\n%s", err, cp.Logs(40))
		cp.Down()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) up(ctx context.Context) error {
	var err error
	if cp.Dir, err = os.MkdirTemp("", Prefix); err != nil {
		return err
	}
	if cp.opts.AgentBin == "" && cp.opts.StartAgents {
		if cp.opts.AgentBin, cp.opts.DbgBin, err = agentproc.Build(cluster.RepoRoot(), filepath.Join(cp.Dir, "bin")); err != nil {
			return err
		}
	}
	if err := cp.buildLAN(); err != nil {
		return err
	}
	if err := cp.writeConfig(); err != nil {
		return err
	}
	if cp.opts.StartAgents {
		for _, n := range cp.Nodes {
			if err := n.StartAgent(); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := cp.startEtcd(ctx); err != nil {
		return err
	}
	for _, n := range cp.Nodes {
		if err := n.apiserver.start(cp.apiserverArgv(n)); err != nil {
			return err
		}
	}
	for _, n := range cp.Nodes {
		if err := n.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (cp *ControlPlane) buildLAN() error {
	lan, err := netlab.New(Prefix, Subnet)
	if err != nil {
		return err
	}
	if err := lan.EnableIPv6(Subnet6); err != nil {
		return err
	}
	cp.LAN = lan
	if err := lan.Setup(NodeNames...); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	if cp.Client, err = lan.Add(ClientName, clientNum); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	for _, name := range NodeNames {
		h := lan.Host(name)
		dir := filepath.Join(cp.Dir, name)
		n := &CPNode{
			Name: name, Host: h, Dir: dir, cp: cp,
			BPFRoot:   filepath.Join(dir, "bpffs"),
			etcd:      &process{name: "etcd", netns: h.Netns, dir: dir},
			apiserver: &process{name: "kube-apiserver", netns: h.Netns, dir: dir},
			agent:     &process{name: "herald-agent", netns: h.Netns, dir: dir},
		}
		if err := agentproc.MountBPFFS(n.BPFRoot); err != nil {
			return err
		}
		if err := enableLoopback6(h.Netns); err != nil {
			return err
		}
		cp.Nodes = append(cp.Nodes, n)
	}
	return nil
}

// startEtcd starts the three members at once (each waits for the others
// to form the cluster) and waits until all are healthy.
func (cp *ControlPlane) startEtcd(ctx context.Context) error {
	for _, n := range cp.Nodes {
		if err := n.etcd.start(cp.etcdArgv(n)); err != nil {
			return err
		}
	}
	for _, n := range cp.Nodes {
		for {
			err := n.etcdHealthy(ctx)
			if err == nil {
				break
			}
			if closed(n.etcd.exited()) {
				return fmt.Errorf("etcd of %s exited", n.Name)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("etcd of %s not healthy: %w", n.Name, err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// Node returns a node by name (nil if unknown).
func (cp *ControlPlane) Node(name string) *CPNode {
	for _, n := range cp.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Down stops the agents (SIGTERM: they withdraw), kills everything else in
// the nodes' and the client's namespaces (etcd, the API servers, whatever a
// test started there), removes the LAN, the bpffs mounts and the work
// directory, and releases the lock. Safe to call more than once.
func (cp *ControlPlane) Down() error {
	var errs []error
	cp.downOnce.Do(func() {
		signal.Stop(cp.sigs)
		close(cp.sigs)
		for _, n := range cp.Nodes {
			if err := n.StopAgent(); err != nil {
				errs = append(errs, err)
			}
		}
		for _, n := range cp.Nodes {
			errs = append(errs, killNetns(n.Host.Netns))
		}
		if cp.Client != nil {
			errs = append(errs, killNetns(cp.Client.Netns))
		}
		if cp.LAN != nil {
			errs = append(errs, cp.LAN.Teardown()...)
		}
		if cp.Dir != "" {
			errs = append(errs, agentproc.UnmountAll(cp.Dir)...)
			if cp.KeepLogs {
				errs = append(errs, keepLogs(cp.Dir))
			}
			errs = append(errs, os.RemoveAll(cp.Dir))
		}
		cp.unlock()
	})
	return errors.Join(errs...)
}

// cleanupLeftovers removes what a run killed before its Down left: the
// processes in the harness's namespaces (frozen ones too), then what every
// netns suite leaves (agents, namespaces, mounts, work directories).
func cleanupLeftovers() {
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		if len(e.Name()) > len(Prefix) && e.Name()[:len(Prefix)] == Prefix {
			_ = killNetns(e.Name())
		}
	}
	suite.CleanupLeftovers(LockName, Prefix)
}

// Logs returns the tails (maxLines each) of every daemon's logs, node by
// node: for a failing test's output.
func (cp *ControlPlane) Logs(maxLines int) string {
	var s string
	for _, n := range cp.Nodes {
		s += n.Logs(maxLines)
	}
	return s
}

// keepLogs copies the *.log files under dir, keeping their relative paths,
// to a new directory herald-cpvip-logs-* in the temporary directory, which
// no later run removes.
func keepLogs(dir string) error {
	dst, err := os.MkdirTemp("", "herald-cpvip-logs-")
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "cpvip: logs kept in", dst)
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".log" {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}
