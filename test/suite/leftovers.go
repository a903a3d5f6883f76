package suite

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/heraldlb/herald/test/cluster"
)

// StopLeftoverCluster stops the control plane (etcd, kube-apiserver) that
// an earlier run of a suite, killed before its teardown, left running in
// dir, and removes dir. Anything but a test/cluster directory is left
// alone. name prefixes the messages.
func StopLeftoverCluster(name, dir string) {
	if dir == "" || !strings.HasPrefix(filepath.Base(dir), "herald-cluster-") {
		return
	}
	if _, err := os.Stat(dir); err != nil {
		return
	}
	root := cluster.RepoRoot()
	if root == "" {
		return
	}
	fmt.Fprintln(os.Stderr, name+": stopping the leftover control plane in", dir)
	out, err := exec.Command(filepath.Join(root, "install", "dev", "cluster-down.sh"), dir).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n%s\n", name, err, out)
		return
	}
	_ = os.RemoveAll(dir)
}
