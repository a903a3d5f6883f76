// Package agentproc runs herald-agent as a process for end-to-end tests and
// benchmarks: on the host or inside a network namespace (`ip netns exec`),
// started and restarted, stopped as the kubelet would (SIGTERM), killed
// (SIGKILL), frozen and thawed (SIGSTOP/SIGCONT), and inspected through
// herald-dbg, its health endpoint and its log.
package agentproc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Build compiles herald-agent and herald-dbg from the repository at root
// into dir and returns their paths. Tests build their own copy so that they
// never run a stale _output/bin.
func Build(root, dir string) (agent, dbg string, err error) {
	agent, dbg = filepath.Join(dir, "herald-agent"), filepath.Join(dir, "herald-dbg")
	for bin, pkg := range map[string]string{agent: "./cmd/herald-agent", dbg: "./cmd/herald-dbg"} {
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	}
	return agent, dbg, nil
}

// Options describe one agent.
type Options struct {
	Name       string // --node-name
	Netns      string // run inside this named network namespace; "" = the host's
	Dir        string // its logs and herald-dbg socket (created)
	AgentBin   string // herald-agent (Build)
	DbgBin     string // herald-dbg
	Kubeconfig string
	Namespace  string // --k8s-namespace
	// HealthAddr, if set, is --health-serve-addr, reachable from the test.
	HealthAddr string
	Args       []string // more flags
}

// Agent is one node's agent; each Start runs a new process.
type Agent struct {
	Options

	mu     sync.Mutex
	proc   *proc
	starts int
}

type proc struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once it exited
	err     error         // exit status, once done

	mu       sync.Mutex
	expected bool // we stopped or killed it
}

// New returns an agent that is not running yet.
func New(o Options) *Agent { return &Agent{Options: o} }

func (a *Agent) Socket() string { return filepath.Join(a.Dir, "dbg.sock") }

// Start runs a new agent process. It does not wait for it to be ready.
func (a *Agent) Start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc != nil && !a.proc.exited() {
		return fmt.Errorf("agent %s already runs", a.Name)
	}
	if err := os.MkdirAll(a.Dir, 0o755); err != nil {
		return err
	}
	a.starts++
	p := &proc{logPath: filepath.Join(a.Dir, fmt.Sprintf("agent-%d.log", a.starts)), done: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig", a.Kubeconfig,
		"--node-name", a.Name,
		"--k8s-namespace", a.Namespace,
		"--dbg-socket", a.Socket(),
	}
	if a.HealthAddr != "" {
		args = append(args, "--health-serve-addr", a.HealthAddr)
	}
	args = append(args, a.Args...)
	if a.Netns != "" {
		// ip execs the agent: the process is the agent itself.
		p.cmd = exec.Command("ip", append([]string{"netns", "exec", a.Netns, a.AgentBin}, args...)...)
	} else {
		p.cmd = exec.Command(a.AgentBin, args...)
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.Env = cleanEnv()
	// Should the test binary die, the agent goes with it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting agent %s: %w", a.Name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	a.proc = p
	return nil
}

// cleanEnv is the test's environment without anything the agent would read
// as configuration.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HERALD_") || k == "NODE_NAME" || k == "KUBECONFIG" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (a *Agent) current() *proc {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.proc
}

// Running reports whether a process of this agent is alive (frozen counts).
func (a *Agent) Running() bool {
	p := a.current()
	return p != nil && !p.exited()
}

// PID of the running process, 0 if none.
func (a *Agent) PID() int {
	if p := a.current(); p != nil && !p.exited() {
		return p.cmd.Process.Pid
	}
	return 0
}

// stopTimeout bounds how long a stop may take before the agent is killed.
const stopTimeout = 60 * time.Second

// Stop sends SIGTERM, as the kubelet does, and waits for the exit.
func (a *Agent) Stop() error { return a.end(syscall.SIGTERM) }

// Kill9 kills the process: no cleanup, its Leases stay until they expire.
func (a *Agent) Kill9() error { return a.end(syscall.SIGKILL) }

func (a *Agent) end(sig syscall.Signal) error {
	p := a.current()
	if p == nil || p.exited() {
		return nil
	}
	p.mu.Lock()
	p.expected = true
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a frozen process cannot handle SIGTERM
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("agent %s did not exit within %s of %v; killed", a.Name, stopTimeout, sig)
	}
}

// Freeze stops the process with SIGSTOP: it keeps its sockets and its
// belief that it leads, as after a GC pause, a throttled cgroup or a
// suspended VM.
func (a *Agent) Freeze() error { return a.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen process (SIGCONT).
func (a *Agent) Thaw() error { return a.signal(syscall.SIGCONT) }

func (a *Agent) signal(sig syscall.Signal) error {
	p := a.current()
	if p == nil || p.exited() {
		return fmt.Errorf("agent %s is not running", a.Name)
	}
	return p.cmd.Process.Signal(sig)
}

// UnexpectedExit describes the exit of a process that died without being
// asked to; "" if it runs or was stopped on purpose.
func (a *Agent) UnexpectedExit() string {
	p := a.current()
	if p == nil || !p.exited() {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.expected {
		return ""
	}
	return fmt.Sprintf("agent %s exited unexpectedly: %v", a.Name, p.err)
}

// Dbg runs herald-dbg against the agent.
func (a *Agent) Dbg(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.DbgBin, append([]string{"--socket", a.Socket()}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("agent %s: herald-dbg %s: %w: %s", a.Name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Table reads one of the agent's statedb tables.
func Table[T any](a *Agent, table string) ([]T, error) {
	out, err := a.Dbg("statedb", table, "-o", "json")
	if err != nil {
		return nil, err
	}
	var rows []T
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("agent %s: decoding herald-dbg statedb %s: %w\n%s", a.Name, table, err, out)
	}
	return rows, nil
}

// Healthz returns the status code and body of the agent's /healthz.
func (a *Agent) Healthz() (int, string, error) {
	if a.HealthAddr == "" {
		return 0, "", fmt.Errorf("agent %s has no health address", a.Name)
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + a.HealthAddr + "/healthz")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Logs returns the logs of every process of this agent, oldest first, each
// cut to its last maxLines lines.
func (a *Agent) Logs(maxLines int) string {
	a.mu.Lock()
	starts := a.starts
	a.mu.Unlock()
	var b strings.Builder
	for i := 1; i <= starts; i++ {
		path := filepath.Join(a.Dir, fmt.Sprintf("agent-%d.log", i))
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "----- agent %s, run %d (%s) -----\n%s\n", a.Name, i, path, tail(string(data), maxLines))
	}
	return b.String()
}

func tail(s string, max int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= max {
		return strings.Join(lines, "\n")
	}
	return fmt.Sprintf("[... %d earlier lines]\n%s", len(lines)-max, strings.Join(lines[len(lines)-max:], "\n"))
}
