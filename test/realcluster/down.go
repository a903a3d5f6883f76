package realcluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/heraldlb/herald/test/netlab"
)

// Tearing the cluster down, also after a run that was killed.

// Down tears down the cluster in dir, whatever state it is in, and
// removes dir. Nothing there is fine.
func Down(dir string) error {
	// Absolute, as Up and Open make it: mounted() compares with the
	// absolute paths of /proc/self/mountinfo, and a relative dir (make
	// demo-down's) would leave the node's mount namespaces mounted.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	p := paths{dir: dir}
	var st state
	if b, err := os.ReadFile(p.state()); err == nil {
		_ = json.Unmarshal(b, &st)
	}
	var errs []error
	// The BGP router first: its namespace goes with the LAN.
	stopRouter(dir)
	names := st.Nodes
	if entries, err := os.ReadDir(filepath.Join(dir, "nodes")); err == nil {
		for _, e := range entries {
			if !contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	for _, name := range names {
		n := &Node{Name: name, Dir: p.node(name), MountNS: p.mountNS(name), Cgroup: p.nodeCgroup(name)}
		if err := n.teardown(); err != nil {
			errs = append(errs, err)
		}
	}
	cp := controlPlane{p: p}
	ds := cp.daemons()
	for i := len(ds) - 1; i >= 0; i-- {
		if err := ds[i].stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, netlab.Cleanup(Prefix)...)
	if err := fenceServiceRanges("del"); err != nil {
		errs = append(errs, err)
	}
	for s, v := range st.Sysctls {
		if err := os.WriteFile("/proc/sys/"+s, []byte(v), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	if mounted(p.nsDir()) {
		if out, err := exec.Command("umount", p.nsDir()).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("umount %s: %w: %s", p.nsDir(), err, bytes.TrimSpace(out)))
		}
	}
	if err := removeMountPoints(st.HostDirs); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
		if b, err := os.ReadFile(runningMarker); err == nil && strings.TrimSpace(string(b)) == dir {
			_ = os.Remove(runningMarker)
		}
	}
	return errors.Join(errs...)
}

// runningMarker names the directory of the cluster that is up.
const runningMarker = "/run/herald-realcluster"
