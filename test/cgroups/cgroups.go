// Package cgroups gives the test harnesses that run daemons as a node
// would (the real cluster's nodes, a control-plane node's systemd) a cgroup
// subtree of their own in every hierarchy, so that tearing them down finds
// every process they started (containers run in mount namespaces of their
// own; only their cgroup finds them) and leaves no cgroup behind.
//
// These machines mount the cgroup v1 hierarchies, which kubelet 1.34 and
// systemd 252 still support, and beside them a unified hierarchy without
// controllers, where systemd tracks its units and runc makes containers'
// cgroups too. A path is a cgroup below each hierarchy's root, such as
// /hrc-node1/system.
package cgroups

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

// Root is where the hierarchies are mounted.
const Root = "/sys/fs/cgroup"

// hierarchies are the mounted v1 hierarchies: cpu,cpuacct, memory, ...,
// systemd (name=systemd). Co-mounted ones appear once.
func hierarchies() ([]string, error) {
	entries, err := os.ReadDir(Root)
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
		if _, err := os.Stat(filepath.Join(Root, e.Name(), "cgroup.procs")); err == nil {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no cgroup v1 hierarchy under " + Root)
	}
	return out, nil
}

// withUnified adds the unified hierarchy to hs when it is mounted beside
// them (the hybrid layout): it has no controllers, but systemd tracks its
// units there and runc makes the containers' cgroups there too.
func withUnified(hs []string) []string {
	if _, err := os.Stat(filepath.Join(Root, "unified", "cgroup.procs")); err == nil {
		return append(hs, "unified")
	}
	return hs
}

// Ensure creates the cgroup path in every hierarchy, the unified one
// included. cpuset's cpus and mems start empty in a new v1 cgroup, which
// then admits no process: each level takes its parent's.
func Ensure(path string) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	hs = withUnified(hs)
	for _, h := range hs {
		cur := filepath.Join(Root, h)
		for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
			parent := cur
			cur = filepath.Join(cur, part)
			if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("cgroup %s: %w", cur, err)
			}
			if strings.Contains(h, "cpuset") {
				if err := inheritCpuset(parent, cur); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func inheritCpuset(parent, cur string) error {
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
	return nil
}

// JoinScript is shell that moves the shell into the cgroup path (made by
// Ensure) in every hierarchy, the unified one included; what the shell
// executes next stays there.
func JoinScript(path string) string {
	p := strings.Trim(path, "/")
	return fmt.Sprintf(`for h in %s/*/; do [ -f "${h}%s/cgroup.procs" ] && echo $$ > "${h}%s/cgroup.procs"; done; `, Root, p, p)
}

// PIDs lists every process in the subtree (of the pids hierarchy, or of
// the first one there is).
func PIDs(path string) []int {
	hs, err := hierarchies()
	if err != nil {
		return nil
	}
	h := hs[0]
	if slices.Contains(hs, "pids") {
		h = "pids"
	}
	var pids []int
	_ = filepath.WalkDir(filepath.Join(Root, h, path), func(p string, d fs.DirEntry, err error) error {
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

// Kill kills every process in the subtree and waits until they are gone (a
// process frozen with SIGSTOP dies from SIGKILL too).
func Kill(path string, within time.Duration) error {
	return KillAll("cgroup "+path, func() []int { return PIDs(path) }, within)
}

// KillAll kills the processes find lists, again and again (a process may
// fork while it is killed), until find lists none or within has passed;
// what names them in the error.
func KillAll(what string, find func() []int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		pids := find()
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: processes %v do not go", what, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Remove removes the subtree from every hierarchy, the unified one
// included, deepest first. A cgroup whose last process has just died stays
// busy for a moment: Remove tries again until within has passed. A subtree
// that is not there is fine.
func Remove(path string, within time.Duration) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	hs = withUnified(hs)
	deadline := time.Now().Add(within)
	for {
		var errs []error
		for _, h := range hs {
			errs = append(errs, removeTree(filepath.Join(Root, h, path)))
		}
		err := errors.Join(errs...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func removeTree(root string) error {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("rmdir %s: %w", dirs[i], err))
		}
	}
	return errors.Join(errs...)
}
