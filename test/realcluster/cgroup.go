package realcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Each node has its own cgroup subtree, /<cluster>-<node>, in every cgroup
// v1 hierarchy: the kubelet's cgroupRoot (its kubepods live under it), and
// <subtree>/system for the node's daemons (containerd and its shims, the
// kubelet, kube-proxy). Tearing a node down kills what is left in the
// subtree (containers run in their own mount namespaces, so only their
// cgroup finds them) and removes it. These machines mount cgroup v1 only
// (the unified hierarchy is empty), which kubelet 1.34 still supports.

const cgroupFS = "/sys/fs/cgroup"

// cgroupHierarchies are the mounted v1 hierarchies: cpu, memory, ...,
// systemd (name=systemd). Co-mounted ones (cpu,cpuacct) appear once.
func cgroupHierarchies() ([]string, error) {
	entries, err := os.ReadDir(cgroupFS)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		// Symlinks (cpu -> cpu,cpuacct on some layouts) name a hierarchy
		// that is listed under its own name too.
		if !e.IsDir() || e.Type()&fs.ModeSymlink != 0 || e.Name() == "unified" {
			continue
		}
		if _, err := os.Stat(filepath.Join(cgroupFS, e.Name(), "cgroup.procs")); err == nil {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no cgroup v1 hierarchy under " + cgroupFS)
	}
	return out, nil
}

// ensureCgroup creates a cgroup (a path like /hrc-node1/system) in every
// hierarchy. cpuset's cpus and mems start empty in a new v1 cgroup, which
// admits no process: each level takes its parent's.
func ensureCgroup(path string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		cur := filepath.Join(cgroupFS, h)
		for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
			parent := cur
			cur = filepath.Join(cur, part)
			if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("cgroup %s: %w", cur, err)
			}
			if strings.Contains(h, "cpuset") {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					if b, _ := os.ReadFile(filepath.Join(cur, f)); len(strings.TrimSpace(string(b))) > 0 {
						continue
					}
					v, err := os.ReadFile(filepath.Join(parent, f))
					if err != nil {
						return err
					}
					if err := os.WriteFile(filepath.Join(cur, f), v, 0o644); err != nil {
						return fmt.Errorf("cgroup %s/%s: %w", cur, f, err)
					}
				}
			}
		}
	}
	return nil
}

// joinCgroupScript is shell that moves the shell into the cgroup in every
// hierarchy (then it executes the daemon, which stays there).
func joinCgroupScript(path string) string {
	return fmt.Sprintf(`for h in %s/*/; do [ -f "$h%s/cgroup.procs" ] && echo $$ > "$h%s/cgroup.procs"; done; `,
		cgroupFS, strings.Trim(path, "/"), strings.Trim(path, "/"))
}

// cgroupPIDs lists every process in the subtree (of the pids hierarchy, or
// the first one that exists).
func cgroupPIDs(path string) []int {
	hs, err := cgroupHierarchies()
	if err != nil {
		return nil
	}
	h := hs[0]
	if slices.Contains(hs, "pids") {
		h = "pids"
	}
	var pids []int
	_ = filepath.WalkDir(filepath.Join(cgroupFS, h, path), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// killCgroup kills every process in the subtree and waits until they are
// gone (a process frozen with SIGSTOP dies from SIGKILL too).
func killCgroup(path string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		pids := cgroupPIDs(path)
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes %v do not go", path, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// removeCgroup removes the (empty) subtree from every hierarchy, deepest
// first.
func removeCgroup(path string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hs {
		root := filepath.Join(cgroupFS, h, path)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// killMountNS kills every process in the mount namespace bound at nsFile
// and waits until they are gone; nothing bound there is fine.
func killMountNS(nsFile string, within time.Duration) error {
	var st syscall.Stat_t
	if err := syscall.Stat(nsFile, &st); err != nil || !mounted(nsFile) {
		return nil
	}
	want := fmt.Sprintf("mnt:[%d]", st.Ino)
	deadline := time.Now().Add(within)
	for {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && ns == want && processRuns(pid) {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mount namespace %s: processes %v do not go", nsFile, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
