// Package havip proves the control-plane VIP (herald-agent
// control-plane-vip) on the real cluster of test/realcluster in its HA
// form: three control-plane nodes, each with an etcd member, a
// kube-apiserver and Herald's control-plane VIP as the static Pod of
// install/control-plane, unchanged, from Herald's image; the kubelets,
// kube-proxy, the controller-manager, the scheduler and the tests reach
// the API servers only through the VIP.
//
// Needs root; takes the real cluster's lock (one real cluster per
// machine). HERALD_REALCLUSTER_KEEP=1 and HERALD_REALCLUSTER_REUSE=1 (with
// HERALD_REALCLUSTER_DIR) as for test/realcluster/e2e. Tests check outcomes, never durations: the figures they print
// are recorded in Documentation/benchmarks.md (HERALD_CPVIP_TRIALS=20 for
// the full count).
package havip

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/realcluster"
	"github.com/heraldlb/herald/test/realcluster/images"
)

var (
	cl   *realcluster.Cluster
	work string
)

func TestMain(m *testing.M) {
	os.Exit(realcluster.RunSuite(m, "havip", func(dir, w string) error {
		work = w
		return setup(dir)
	}))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "havip: "+format+"\n", args...)
}

func setup(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if os.Getenv("HERALD_REALCLUSTER_REUSE") == "1" {
		// An HA cluster left up by an earlier run (HERALD_REALCLUSTER_KEEP).
		var err error
		if cl, err = realcluster.Open(dir); err == nil && cl.ColdStart != nil {
			logf("reusing the cluster in %s", dir)
			return nil
		}
		logf("no HA cluster to reuse in %s (%v): bringing one up", dir, err)
	}
	root := realcluster.RepoRoot()
	herald, err := images.BuildHerald(ctx, root, filepath.Join(work, "images"))
	if err != nil {
		return err
	}
	pause, err := images.BuildPause(ctx, root, filepath.Join(work, "images"))
	if err != nil {
		return err
	}
	files, err := controlPlaneFiles(root)
	if err != nil {
		return err
	}
	cl, err = realcluster.Up(ctx, dir, realcluster.Options{
		Images: []string{herald.Path, pause.Path}, SandboxImage: images.PauseRef, Log: logf,
		HA: &realcluster.HA{NodeFiles: files},
		// TestFailover kills the static Pod's agent 20 times over: the
		// kubelet's default back-off would wait minutes by the tenth.
		MaxRestartPeriod: time.Second,
	})
	return err
}

// controlPlaneFiles installs the control-plane VIP on a node as
// Documentation/control-plane-vip.md says: the static Pod of
// install/control-plane as it is, the settings as files, the secret.
func controlPlaneFiles(root string) (func(*realcluster.Cluster, *realcluster.Node) map[string][]byte, error) {
	pod, err := os.ReadFile(filepath.Join(root, "install", "control-plane", "herald-control-plane-vip.yaml"))
	if err != nil {
		return nil, err
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	secret := hex.EncodeToString(raw) + "\n"
	return func(c *realcluster.Cluster, n *realcluster.Node) map[string][]byte {
		var peers []string
		for _, m := range c.ControlPlaneNodes() {
			peers = append(peers, m.Name+"="+m.IP.String())
		}
		const dir = "/etc/herald/control-plane-vip/"
		return map[string][]byte{
			"/etc/kubernetes/manifests/herald-control-plane-vip.yaml": pod,
			dir + "peer-secret":             []byte(secret),
			dir + "config/vips":             []byte(realcluster.ControlPlaneVIP.String() + "," + realcluster.ControlPlaneVIP6.String()),
			dir + "config/peers":            []byte(strings.Join(peers, ",")),
			dir + "config/peer-secret-file": []byte(dir + "peer-secret"),
			dir + "config/node-name":        []byte(n.Name),
			dir + "config/devices":          []byte("eth0"),
		}
	}, nil
}
