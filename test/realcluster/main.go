package realcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/heraldlb/herald/test/netlab"
)

// RunSuite is the TestMain of a suite on the real cluster: it needs root,
// takes the real cluster's lock (one per machine), makes a work directory,
// calls setup with the cluster's directory (HERALD_REALCLUSTER_DIR, else
// one in the work directory) and the work directory, runs the tests and
// tears the cluster down, unless HERALD_REALCLUSTER_KEEP=1 keeps it up
// (setup may then reuse it, with HERALD_REALCLUSTER_REUSE=1). name
// prefixes its messages.
func RunSuite(m *testing.M, name string, setup func(dir, work string) error) int {
	say := func(format string, args ...any) { fmt.Fprintf(os.Stderr, name+": "+format+"\n", args...) }
	if os.Geteuid() != 0 {
		say("needs root (network and mount namespaces, cgroups, containerd)")
		return 1
	}
	unlock, err := netlab.Lock("realcluster")
	if err != nil {
		say("%v", err)
		return 1
	}
	defer unlock()
	work, err := os.MkdirTemp("", "herald-"+name+"-")
	if err != nil {
		say("%v", err)
		return 1
	}
	dir := os.Getenv("HERALD_REALCLUSTER_DIR")
	if dir == "" {
		dir = filepath.Join(work, "cluster")
	}
	defer func() {
		if os.Getenv("HERALD_REALCLUSTER_KEEP") == "1" {
			say("left up in %s: export KUBECONFIG=%s", dir, filepath.Join(dir, "kubeconfig", "admin"))
			return
		}
		if err := Down(dir); err != nil {
			say("tearing down: %v", err)
		}
		_ = os.RemoveAll(work)
	}()
	if err := setup(dir, work); err != nil {
		say("%v", err)
		return 1
	}
	return m.Run()
}
