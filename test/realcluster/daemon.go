package realcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/cgroups"
)

// daemon is one long-running process of the cluster (etcd, kube-apiserver,
// a node's containerd, kubelet, ...). It runs detached, in its own session,
// so that it outlives the command that brought the cluster up, as a
// service outlives systemctl. Its pid file and log are in dir; it is found
// again by the pid file, so that another process (the test suite, the
// down command) can stop it.
type daemon struct {
	name string // file names: <name>.pid, <name>.log
	dir  string
	argv []string
	// Where it runs: the files of a mount and a network namespace to enter
	// (empty: the caller's), and the cgroup it starts in, in every v1
	// controller (empty: the caller's).
	mountNS, netNS string
	cgroup         string
}

func (d daemon) pidFile() string { return filepath.Join(d.dir, d.name+".pid") }

// Log is the path of its output.
func (d daemon) Log() string { return filepath.Join(d.dir, d.name+".log") }

// start starts it unless it runs already.
func (d daemon) start() error {
	if _, ok := d.pid(); ok {
		return nil
	}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(d.Log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "==== %s: starting %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(d.argv, " "))

	argv := d.argv
	if d.mountNS != "" || d.netNS != "" {
		// nsenter enters the namespaces, then executes the program in
		// place: the pid stays the daemon's.
		ns := []string{"nsenter"}
		if d.mountNS != "" {
			ns = append(ns, "--mount="+d.mountNS)
		}
		if d.netNS != "" {
			ns = append(ns, "--net="+d.netNS)
		}
		argv = append(append(ns, "--"), argv...)
	}
	if d.cgroup != "" {
		// Joins the cgroup before anything else runs, so that whatever it
		// starts (containerd's shims) is in it too, and can be found there.
		argv = append([]string{"sh", "-c", cgroups.JoinScript(d.cgroup) + `exec "$@"`, "sh"}, argv...)
	}
	closeInheritedOnExec()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", d.name, err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return os.WriteFile(d.pidFile(), []byte(strconv.Itoa(pid)), 0o644)
}

// pid returns its process id while it runs (a zombie does not).
func (d daemon) pid() (int, bool) {
	b, err := os.ReadFile(d.pidFile())
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, processRuns(pid)
}

// processRuns reports whether pid is a process that has not exited.
func processRuns(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// stop ends it: SIGTERM, then SIGKILL after grace. Stopped already is fine.
func (d daemon) stop(grace time.Duration) error {
	pid, ok := d.pid()
	if !ok {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for processRuns(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if !waitGone(pid, 10*time.Second) {
				return fmt.Errorf("%s (pid %d) does not go after SIGKILL", d.name, pid)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func waitGone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for processRuns(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// tailFile returns the last lines of a file, for error messages.
func tailFile(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}
