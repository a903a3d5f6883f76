// Package cluster runs a throwaway control plane (etcd + kube-apiserver) for
// integration tests. It drives install/dev/cluster-up.sh and
// install/dev/cluster-down.sh, so tests, the demo and developers share one
// way of starting a cluster.
//
// Typical use from a TestMain:
//
//	func TestMain(m *testing.M) {
//		c, err := cluster.Start(cluster.Options{})
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		testCluster = c
//		code := m.Run()
//		c.Stop()
//		os.Exit(code)
//	}
//
// The binaries come from `make tools` (install/dev/ensure-tools.sh):
// /usr/bin/etcd and ${HERALD_CACHE:-$HOME/.cache/herald}/kube-apiserver-<version>
// for KubeVersion and OldestKubeVersion. HERALD_KUBE_VERSION=v1.31.14 runs a
// whole test package against the oldest supported Kubernetes.
package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The kube-apiserver versions ensure-tools.sh builds; they must match
// install/dev/kube-versions.sh (TestVersionsMatchScripts).
const (
	// KubeVersion is the current version, the one clusters run by default.
	KubeVersion = "v1.34.2"
	// OldestKubeVersion is the oldest Kubernetes Herald supports
	// (Documentation/install.md). Tests run against it when
	// Options.KubeVersion or $HERALD_KUBE_VERSION asks for it.
	OldestKubeVersion = "v1.31.14"
)

// Versions are the kube-apiserver versions Start can run.
var Versions = []string{KubeVersion, OldestKubeVersion}

const modulePath = "github.com/heraldlb/herald"

// Cluster is a running etcd + kube-apiserver.
type Cluster struct {
	// Dir holds the cluster's state: etcd data, certificates, logs
	// (etcd.log, kube-apiserver.log), pid files and the kubeconfig.
	Dir string
	// Kubeconfig is the path of an admin kubeconfig for the cluster.
	Kubeconfig string
	// RESTConfig is loaded from Kubeconfig, with client-side rate limiting
	// raised for tests.
	RESTConfig *rest.Config
	// Client is a clientset built from RESTConfig.
	Client kubernetes.Interface
	// KubeVersion is the version of the running kube-apiserver.
	KubeVersion string

	root     string
	stopOnce sync.Once
}

// Options configures Start.
type Options struct {
	// Addr is the address kube-apiserver binds to and advertises
	// (default 127.0.0.1). etcd always listens on 127.0.0.1.
	Addr string
	// KubeVersion is the kube-apiserver version to run, one of Versions.
	// Empty means $HERALD_KUBE_VERSION, or KubeVersion when that is unset
	// too: the environment lets a whole test package run against another
	// version without changing its code.
	KubeVersion string
}

// EnvKubeVersion is the environment variable Start reads when
// Options.KubeVersion is empty. install/dev/cluster-up.sh reads it too.
const EnvKubeVersion = "HERALD_KUBE_VERSION"

// kubeVersion resolves the version Start runs from opts and the environment.
func kubeVersion(opts Options) (string, error) {
	v, from := opts.KubeVersion, "Options.KubeVersion"
	if v == "" {
		v, from = os.Getenv(EnvKubeVersion), EnvKubeVersion
	}
	if v == "" {
		return KubeVersion, nil
	}
	for _, known := range Versions {
		if v == known {
			return v, nil
		}
	}
	return "", fmt.Errorf("cluster: %s=%q: not a version ensure-tools.sh builds (%s)", from, v, strings.Join(Versions, ", "))
}

// Start brings up a fresh etcd + kube-apiserver in a new temporary directory,
// on free ports picked at random, by running install/dev/cluster-up.sh. It
// returns once the apiserver is ready and the default namespace exists. Call
// Stop to tear it down.
func Start(opts Options) (*Cluster, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1"
	}
	version, err := kubeVersion(opts)
	if err != nil {
		return nil, err
	}
	if err := checkTools(version); err != nil {
		return nil, err
	}
	root := RepoRoot()
	if root == "" {
		return nil, fmt.Errorf("cluster: cannot find the repository root (a go.mod of module %s) above the working directory", modulePath)
	}
	up := filepath.Join(root, "install", "dev", "cluster-up.sh")

	// Ports picked here can be taken by someone else before the processes
	// bind them; cluster-up.sh then fails fast, and we try again.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		c, err := start(root, up, addr, version)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if !errors.Is(err, errPortRace) {
			break
		}
	}
	return nil, lastErr
}

var errPortRace = errors.New("port in use")

func start(root, up, addr, version string) (*Cluster, error) {
	apiPort, etcdPort, err := freePorts(addr)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "herald-cluster-")
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Cluster{Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig"), KubeVersion: version, root: root}

	cmd := exec.Command(up, dir)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"HERALD_APISERVER_ADDR="+addr,
		"HERALD_APISERVER_PORT="+strconv.Itoa(apiPort),
		"HERALD_ETCD_PORT="+strconv.Itoa(etcdPort),
		EnvKubeVersion+"="+version,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.Stop()
		err = fmt.Errorf("cluster: %s %s: %w\n%s", up, dir, err, bytes.TrimSpace(out))
		if bytes.Contains(out, []byte("already in use")) {
			err = fmt.Errorf("%w: %w", errPortRace, err)
		}
		return nil, err
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("cluster: loading %s: %w", c.Kubeconfig, err)
	}
	cfg.QPS = 1000
	cfg.Burst = 2000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c.RESTConfig = cfg
	c.Client = client

	// /readyz is ok before the bootstrap controller has created the
	// "default" namespace; wait for it so tests can use it right away.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		_, err = client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			c.Stop()
			return nil, fmt.Errorf("cluster: namespace %q did not appear: %w", metav1.NamespaceDefault, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return c, nil
}

// Stop stops etcd and kube-apiserver with install/dev/cluster-down.sh and
// removes Dir. It is safe to call more than once.
func (c *Cluster) Stop() {
	if c == nil {
		return
	}
	c.stopOnce.Do(func() {
		down := filepath.Join(c.root, "install", "dev", "cluster-down.sh")
		if out, err := exec.Command(down, c.Dir).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "cluster: %s %s: %v\n%s\n", down, c.Dir, err, out)
			return // keep Dir (and its logs) for a look
		}
		_ = os.RemoveAll(c.Dir)
	})
}

// RepoRoot returns the repository root: the nearest directory at or above
// the working directory whose go.mod declares module
// github.com/heraldlb/herald. It returns "" if there is none.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if moduleOf(filepath.Join(dir, "go.mod")) == modulePath {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// moduleOf returns the module path declared in the go.mod file at path.
func moduleOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// ApiserverPath is where ensure-tools.sh puts kube-apiserver of the given
// version.
func ApiserverPath(version string) string {
	cache := os.Getenv("HERALD_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "herald")
	}
	return filepath.Join(cache, "kube-apiserver-"+version)
}

func checkTools(version string) error {
	if p := ApiserverPath(version); !isExecutable(p) {
		return fmt.Errorf("cluster: %s is missing: run make tools (install/dev/ensure-tools.sh)", p)
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		return fmt.Errorf("cluster: etcd is missing from PATH: run make tools (install/dev/ensure-tools.sh)")
	}
	return nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// freePorts returns a free TCP port on addr for the apiserver and a free
// port p on 127.0.0.1 for etcd's client URL such that p+1 (etcd's peer URL)
// is free too.
func freePorts(addr string) (apiPort, etcdPort int, err error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	listen := func(host string, port int) (int, bool) {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return 0, false
		}
		held = append(held, l)
		return l.Addr().(*net.TCPAddr).Port, true
	}
	apiPort, ok := listen(addr, 0)
	if !ok {
		return 0, 0, fmt.Errorf("cluster: cannot listen on %s: is it an address of this machine?", addr)
	}
	for i := 0; i < 50; i++ {
		p, ok := listen("127.0.0.1", 0)
		if !ok || p >= 65535 {
			continue
		}
		if _, ok := listen("127.0.0.1", p+1); ok {
			return apiPort, p, nil
		}
	}
	return 0, 0, errors.New("cluster: no free pair of ports for etcd on 127.0.0.1")
}
