// Package e2e proves Herald as users run it, on the real cluster of
// test/realcluster: three nodes with kubelets and containerd, Herald's
// image loaded into each, installed with `helm install` from
// install/helm/herald as a DaemonSet; pods created by the kubelets get
// addresses through herald-ipam, Services get IPs that a client reaches
// through kube-proxy, and the agents are deleted, killed, frozen, upgraded
// and reinstalled under them. One cluster serves every test (bringing one
// up takes about half a minute); tests check outcomes, never durations.
//
// Needs root. HERALD_REALCLUSTER_KEEP=1 leaves the cluster up after the
// run (in HERALD_REALCLUSTER_DIR, or a temporary directory the run
// prints), for a look with kubectl; HERALD_REALCLUSTER_REUSE=1 runs on the
// cluster such a run left in HERALD_REALCLUSTER_DIR.
// HERALD_REALCLUSTER_KUBEPROXY_MIN_SYNC (a duration, e.g. 100ms) starts
// kube-proxy with that iptables.minSyncPeriod instead of its default of
// 1 s, for the benchmark that shows what that period costs.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/realcluster"
	"github.com/heraldlb/herald/test/realcluster/images"
)

// Shared by all tests; set up by TestMain.
var (
	cl    *realcluster.Cluster
	built images.All
	work  string
)

func TestMain(m *testing.M) {
	os.Exit(realcluster.RunSuite(m, "realcluster", func(dir, w string) error {
		work = w
		return setup(dir)
	}))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "realcluster: "+format+"\n", args...)
}

func setup(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root := realcluster.RepoRoot()
	var err error
	start := time.Now()
	if built, err = images.BuildAll(ctx, root, filepath.Join(work, "images"), upgradeTag); err != nil {
		return err
	}
	logf("images built in %s", time.Since(start).Round(100*time.Millisecond))
	if os.Getenv("HERALD_REALCLUSTER_REUSE") == "1" {
		// A cluster left up by an earlier run (HERALD_REALCLUSTER_KEEP),
		// Herald installed: quicker turns while writing a test.
		if cl, err = realcluster.Open(dir); err == nil {
			for _, n := range cl.Nodes {
				for _, p := range built.Paths() {
					if err := cl.LoadImage(ctx, n, p); err != nil {
						return err
					}
				}
			}
			logf("reusing the cluster in %s", dir)
			return cl.WaitDaemonSet(ctx, heraldNS, heraldDS)
		}
		logf("no cluster to reuse in %s (%v): bringing one up", dir, err)
	}
	conflist, err := os.ReadFile(filepath.Join(root, "install", "cni", "10-herald.conflist"))
	if err != nil {
		return err
	}
	minSync, err := kubeProxyMinSync()
	if err != nil {
		return err
	}
	cl, err = realcluster.Up(ctx, dir, realcluster.Options{
		Images: built.Paths(), SandboxImage: images.PauseRef, CNIConflist: conflist, Log: logf,
		KubeProxyMinSyncPeriod: minSync,
	})
	if err != nil {
		return err
	}
	start = time.Now()
	if err := helmInstall(ctx); err != nil {
		return err
	}
	logf("Herald installed with helm and rolled out in %s", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// kubeProxyMinSync is HERALD_REALCLUSTER_KUBEPROXY_MIN_SYNC (0 when unset:
// kube-proxy's default, as users run it).
func kubeProxyMinSync() (time.Duration, error) {
	v := os.Getenv("HERALD_REALCLUSTER_KUBEPROXY_MIN_SYNC")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("HERALD_REALCLUSTER_KUBEPROXY_MIN_SYNC=%q: want a positive duration such as 100ms", v)
	}
	logf("kube-proxy with iptables.minSyncPeriod %s", d)
	return d, nil
}
