package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// APIServerPID returns the pid of the running kube-apiserver.
func (c *Cluster) APIServerPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, "kube-apiserver.pid"))
	if err != nil {
		return 0, fmt.Errorf("cluster: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("cluster: kube-apiserver.pid: %w", err)
	}
	return pid, nil
}

// FreezeAPIServer stops kube-apiserver with SIGSTOP: connections stay
// open and nothing answers, as when the control plane hangs.
func (c *Cluster) FreezeAPIServer() error { return c.signalAPIServer(syscall.SIGSTOP) }

// ThawAPIServer resumes it (SIGCONT).
func (c *Cluster) ThawAPIServer() error { return c.signalAPIServer(syscall.SIGCONT) }

func (c *Cluster) signalAPIServer(sig syscall.Signal) error {
	pid, err := c.APIServerPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("cluster: kube-apiserver (pid %d): %v: %w", pid, sig, err)
	}
	return nil
}

// KillAPIServer kills kube-apiserver with SIGKILL and waits until it is
// gone; clients then get "connection refused". It returns the command line
// to give to StartAPIServer.
func (c *Cluster) KillAPIServer() ([]string, error) {
	pid, err := c.APIServerPID()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, fmt.Errorf("cluster: kube-apiserver command line: %w", err)
	}
	argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("cluster: killing kube-apiserver: %w", err)
	}
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) != nil {
			return argv, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("cluster: kube-apiserver (pid %d) did not exit", pid)
}

// StartAPIServer starts kube-apiserver again with the command line
// KillAPIServer returned (same etcd, certificates and port), detached as
// cluster-up.sh starts it, and waits until it is ready.
func (c *Cluster) StartAPIServer(argv []string) error {
	logf, err := os.OpenFile(filepath.Join(c.Dir, "kube-apiserver.log"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cluster: starting kube-apiserver: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reaped when it exits; Stop kills it by pid
	if err := os.WriteFile(filepath.Join(c.Dir, "kube-apiserver.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		_, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: kube-apiserver not ready after restart: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
