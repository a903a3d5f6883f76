package cgroups

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLifecycle makes a subtree, runs a process in it through JoinScript,
// finds it, kills it and removes the subtree, checking each step in every
// hierarchy.
func TestLifecycle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (creates cgroups); run it as root, as make test does")
	}
	top := fmt.Sprintf("/herald-test-cgroups-%d", os.Getpid())
	path := top + "/node/system"
	t.Cleanup(func() { _ = Kill(top, 5*time.Second); _ = Remove(top, 5*time.Second) })
	if err := Ensure(path); err != nil {
		t.Fatal(err)
	}
	if err := Ensure(path); err != nil {
		t.Fatalf("Ensure again: %v", err)
	}
	hs, err := hierarchies()
	if err != nil {
		t.Fatal(err)
	}
	hs = withUnified(hs)

	cmd := exec.Command("sh", "-c", JoinScript(path)+"exec sleep 600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(PIDs(top), pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is not in %s: %v", pid, top, PIDs(top))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// In every hierarchy, cpuset included (a new cpuset cgroup admits no
	// process until Ensure has given it cpus and mems).
	for _, h := range hs {
		procs, err := os.ReadFile(filepath.Join(Root, h, path, "cgroup.procs"))
		if err != nil {
			t.Fatalf("hierarchy %s: %v", h, err)
		}
		if !slices.Contains(strings.Fields(string(procs)), strconv.Itoa(pid)) {
			t.Fatalf("hierarchy %s: process %d is not in %s (it holds %q)", h, pid, path, procs)
		}
	}

	if err := Remove(top, 200*time.Millisecond); err == nil {
		t.Fatal("Remove succeeded while a process is in the subtree")
	}
	// runc makes the containers' cgroups in the unified hierarchy too.
	if slices.Contains(hs, "unified") {
		if err := os.MkdirAll(filepath.Join(Root, "unified", path, "container"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Kill(top, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if pids := PIDs(top); len(pids) != 0 {
		t.Fatalf("after Kill, %s holds %v", top, pids)
	}
	if err := Remove(top, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if _, err := os.Stat(filepath.Join(Root, h, top)); !os.IsNotExist(err) {
			t.Fatalf("hierarchy %s still has %s (%v)", h, top, err)
		}
	}
	if err := Remove(top, time.Second); err != nil {
		t.Fatalf("Remove of a subtree that is gone: %v", err)
	}
}
