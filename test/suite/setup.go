package suite

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/netlab"
)

// clusterDirFile, in a run's work directory, records the control plane's
// directory, so that a later run can stop it if this one is killed.
const clusterDirFile = "cluster-dir"

// Options describe what a netns suite sets up before its own part.
type Options struct {
	Name   string // the suite: its lock, and the prefix of its messages
	Prefix string // names its namespaces and its work directory (hl2-, ...)
	Subnet netip.Prefix
	// LAN, if set, configures the LAN before its hosts are built
	// (EnableIPv6, SetMACPrefix).
	LAN func(*netlab.LAN) error
	// Hosts are the node namespaces, numbered .11 upwards.
	Hosts []string
	// Namespace is created in the API server: the agents' namespace.
	Namespace string
	// Leftovers, if set, removes what a killed run left that the common
	// cleanup does not know about (FRR, say); it runs under the lock,
	// before the namespaces go.
	Leftovers func()
	// Check, if set, runs after the tests, before the teardown: an error
	// fails the run (a suite-wide invariant, say).
	Check func() error
}

// Env is what Start set up, shared by a suite's tests.
type Env struct {
	Name             string
	Teardown         *Teardown
	Work             string // the run's work directory, removed at the end
	AgentBin, DbgBin string
	LAN              *netlab.LAN
	Cluster          *cluster.Cluster
	Herald           versioned.Interface
	unlock           func()
}

// Main is a netns suite's TestMain: it needs root (needs says what for),
// sets up what Start does, then the suite's own part (setup), runs the
// tests and tears everything down, also on SIGINT or SIGTERM.
func Main(m *testing.M, needs string, o Options, setup func(*Env) error) {
	if os.Geteuid() != 0 {
		fmt.Fprintf(os.Stderr, "%s: needs root (%s); run it as root, as make test does\n", o.Name, needs)
		os.Exit(1)
	}
	os.Exit(run(m, o, setup))
}

func run(m *testing.M, o Options, setup func(*Env) error) int {
	env, err := Start(o)
	if env != nil {
		defer env.Close()
	}
	if err == nil {
		err = setup(env)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, o.Name+":", err)
		return 1
	}
	code := m.Run()
	if o.Check != nil {
		if err := o.Check(); err != nil {
			fmt.Fprintln(os.Stderr, o.Name+":", err)
			return 1
		}
	}
	return code
}

// Start takes the suite's machine-wide lock (its names and addresses are
// fixed), removes what a killed run left, then builds the agent (a compile
// error is reported before anything else is set up), the LAN and the
// control plane with the CRDs installed. Close undoes it all, also when
// Start fails halfway.
func Start(o Options) (*Env, error) {
	unlock, err := netlab.Lock(o.Name)
	if err != nil {
		return nil, err
	}
	if o.Leftovers != nil {
		o.Leftovers()
	}
	CleanupLeftovers(o.Name, o.Prefix)
	e := &Env{Name: o.Name, Teardown: NewTeardown(o.Name), unlock: unlock}
	if e.Work, err = os.MkdirTemp("", o.Prefix); err != nil {
		return e, err
	}
	e.Teardown.Add(func() {
		for _, err := range agentproc.UnmountAll(e.Work) {
			e.Report(err)
		}
		_ = os.RemoveAll(e.Work)
	})
	root := cluster.RepoRoot()
	if root == "" {
		return e, fmt.Errorf("cannot find the repository root")
	}
	if e.AgentBin, e.DbgBin, err = agentproc.Build(root, filepath.Join(e.Work, "bin")); err != nil {
		return e, err
	}
	if err := e.startLAN(o); err != nil {
		return e, err
	}
	return e, e.startCluster(o.Namespace)
}

// Close runs the teardown and releases the lock.
func (e *Env) Close() {
	e.Teardown.Run()
	e.unlock()
}

// Report prints a teardown's error, prefixed with the suite's name.
func (e *Env) Report(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, e.Name+":", err)
	}
}

func (e *Env) startLAN(o Options) error {
	var err error
	if e.LAN, err = netlab.New(o.Prefix, o.Subnet); err != nil {
		return err
	}
	if o.LAN != nil {
		if err := o.LAN(e.LAN); err != nil {
			return err
		}
	}
	e.Teardown.Add(func() {
		for _, err := range e.LAN.Teardown() {
			e.Report(err)
		}
	})
	if err := e.LAN.Setup(o.Hosts...); err != nil {
		return fmt.Errorf("building the LAN: %w", err)
	}
	return nil
}

// startCluster starts etcd and kube-apiserver on the root namespace's LAN
// address, so that agents in other namespaces reach it.
func (e *Env) startCluster(namespace string) error {
	c, err := cluster.Start(cluster.Options{Addr: e.LAN.RootIP().String()})
	if err != nil {
		return err
	}
	e.Teardown.Add(c.Stop)
	_ = os.WriteFile(filepath.Join(e.Work, clusterDirFile), []byte(c.Dir), 0o644)
	e.Cluster = c
	if e.Herald, err = versioned.NewForConfig(c.RESTConfig); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.InstallCRDs(ctx, filepath.Join(cluster.RepoRoot(), "install", "crds")); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	return nil
}

// CreateNode creates a Node object (no kubelet runs) with the given
// InternalIPs, which the agents reach each other at.
func (e *Env) CreateNode(ctx context.Context, obj *corev1.Node, internalIPs ...netip.Addr) error {
	created, err := e.Cluster.Client.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating Node %s: %w", obj.Name, err)
	}
	for _, ip := range internalIPs {
		created.Status.Addresses = append(created.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
	}
	if _, err := e.Cluster.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting the InternalIPs of Node %s: %w", obj.Name, err)
	}
	return nil
}

// CreateLBPool creates a CiliumLoadBalancerIPPool of the given blocks.
func (e *Env) CreateLBPool(ctx context.Context, name string, cidrs ...string) error {
	pool := &v2alpha1.CiliumLoadBalancerIPPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, c := range cidrs {
		pool.Spec.Blocks = append(pool.Spec.Blocks, v2alpha1.CiliumLoadBalancerIPPoolIPBlock{Cidr: c})
	}
	if _, err := e.Herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pool: %w", err)
	}
	return nil
}

// leftoverWorkDirs lists the work directories of earlier runs: directories
// named as os.MkdirTemp("", prefix) names them (prefix<digits>).
func leftoverWorkDirs(prefix string) []string {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	var out []string
	for _, m := range matches {
		suffix := strings.TrimPrefix(filepath.Base(m), prefix)
		if _, err := strconv.ParseUint(suffix, 10, 64); err != nil {
			continue
		}
		if fi, err := os.Lstat(m); err == nil && fi.IsDir() {
			out = append(out, m)
		}
	}
	return out
}

// CleanupLeftovers removes what an earlier run of a suite left behind:
// its agents (identified by their executable, which lives in the run's
// work directory), its control plane (recorded in the work directory), the
// root veth, the prefix's namespaces, mounts under the work directories and
// the directories themselves.
func CleanupLeftovers(name, prefix string) {
	dirs := leftoverWorkDirs(prefix)
	var bins []string
	for _, d := range dirs {
		bins = append(bins, filepath.Join(d, "bin", "herald-agent"))
	}
	agentproc.KillStrays(bins...)
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, clusterDirFile)); err == nil {
			StopLeftoverCluster(name, strings.TrimSpace(string(b)))
		}
	}
	for _, err := range netlab.Cleanup(prefix) {
		fmt.Fprintln(os.Stderr, name+": cleaning up leftovers:", err)
	}
	for _, d := range dirs {
		for _, err := range agentproc.UnmountAll(d) {
			fmt.Fprintln(os.Stderr, name+": cleaning up leftovers:", err)
		}
		fmt.Fprintln(os.Stderr, name+": removing leftover", d)
		_ = os.RemoveAll(d)
	}
}

// StartAgents starts the agents, and stops them at the teardown.
func (e *Env) StartAgents(agents ...*agentproc.Agent) error {
	e.Teardown.Add(func() {
		for _, a := range agents {
			e.Report(a.Stop())
		}
	})
	for _, a := range agents {
		if err := a.Start(); err != nil {
			return err
		}
	}
	return nil
}
