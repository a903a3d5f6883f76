// Package agentproc runs herald-agent as a process for end-to-end tests and
// benchmarks: on the host or inside a network namespace (`ip netns exec`),
// started and restarted, stopped as the kubelet would (SIGTERM), killed
// (SIGKILL), frozen and thawed (SIGSTOP/SIGCONT), and inspected through
// herald-dbg, its health endpoint and its log.
//
// bpffs.go has what agents with an eBPF datapath need: bpffs mounts for
// --bpf-root and the way to their pinned maps.
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
	"slices"
	"strconv"
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
	// MetricsAddr, if set, is --prometheus-serve-addr, reachable from the
	// test (Metrics).
	MetricsAddr string
	// BPFRoot, if set, is --bpf-root: a bpffs the test mounted (MountBPFFS)
	// before it started the agent, where the test reads its pinned maps.
	// If unset the agent uses /sys/fs/bpf, which under `ip netns exec` is
	// a fresh sysfs: the agent mounts bpffs there itself (see BPFFS).
	BPFRoot string
	Args    []string // more flags
}

// Agent is one node's agent; each Start runs a new process.
type Agent struct {
	Options

	mu     sync.Mutex
	proc   *proc
	starts int
	extra  []string // SetExtraArgs
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

// Socket is the agent's --dbg-socket, in Dir.
func (a *Agent) Socket() string { return filepath.Join(a.Dir, "dbg.sock") }

// SetExtraArgs sets flags that every later Start adds after Options.Args,
// until they are set again (none: back to Options.Args alone). A flag given
// twice takes its last value, so a test can restart an agent in another
// mode, or a benchmark with other timings, and restore it afterwards.
func (a *Agent) SetExtraArgs(args ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.extra = slices.Clone(args)
}

// ExtraArgs returns what SetExtraArgs set.
func (a *Agent) ExtraArgs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.extra)
}

func (a *Agent) logPath(run int) string {
	return filepath.Join(a.Dir, fmt.Sprintf("agent-%d.log", run))
}

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
	p := &proc{logPath: a.logPath(a.starts), done: make(chan struct{})}
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
	if a.MetricsAddr != "" {
		args = append(args, "--prometheus-serve-addr", a.MetricsAddr)
	}
	if a.BPFRoot != "" {
		args = append(args, "--bpf-root", a.BPFRoot)
	}
	args = append(append(args, a.Args...), a.extra...)
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

// Exited reports whether the latest process has exited, and if so its exit
// status (nil: status 0), whether it was asked to or not.
func (a *Agent) Exited() (bool, error) {
	p := a.current()
	if p == nil || !p.exited() {
		return false, nil
	}
	return true, p.err
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

// UnexpectedExits describes, one per line (each line starting with a
// newline), the agents whose process died without being asked to: for the
// message of a test that gave up waiting. "" if none did.
func UnexpectedExits(agents ...*Agent) string {
	var b strings.Builder
	for _, a := range agents {
		if msg := a.UnexpectedExit(); msg != "" {
			b.WriteString("\n" + msg)
		}
	}
	return b.String()
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
		path := a.logPath(i)
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "----- agent %s, run %d (%s) -----\n%s\n", a.Name, i, path, Tail(string(data), maxLines))
	}
	return b.String()
}

// LogPath is the log file of the latest process ("" before the first
// Start); it grows while the process runs.
func (a *Agent) LogPath() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.starts == 0 {
		return ""
	}
	return a.logPath(a.starts)
}

// LogMark is a position in an agent's logs (Mark).
type LogMark struct {
	run    int   // the process, counted from 1; 0 before the first Start
	offset int64 // bytes of its log before the mark
}

// Mark returns the current end of the agent's logs, for LogsSince.
func (a *Agent) Mark() LogMark {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := LogMark{run: a.starts}
	if m.run > 0 {
		if fi, err := os.Stat(a.logPath(m.run)); err == nil {
			m.offset = fi.Size()
		}
	}
	return m
}

// LogsSince returns what the agent logged after the mark: the rest of the
// log of the process that ran then and the logs of every later one, each
// after a line "[run N of agent NAME]". The zero mark is the beginning.
func (a *Agent) LogsSince(m LogMark) string {
	a.mu.Lock()
	starts := a.starts
	a.mu.Unlock()
	var b strings.Builder
	for i := max(m.run, 1); i <= starts; i++ {
		data, err := os.ReadFile(a.logPath(i))
		if err != nil {
			continue
		}
		if i == m.run && m.offset <= int64(len(data)) {
			data = data[m.offset:]
		}
		fmt.Fprintf(&b, "[run %d of agent %s]\n%s", i, a.Name, data)
	}
	return b.String()
}

// Tail keeps the last max lines of s, saying how many it left out.
func Tail(s string, max int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= max {
		return strings.Join(lines, "\n")
	}
	return fmt.Sprintf("[... %d earlier lines]\n%s", len(lines)-max, strings.Join(lines[len(lines)-max:], "\n"))
}

// KillStrays SIGKILLs every process whose executable is one of bins (a
// herald-agent that Build put in a run's directory) and waits until they
// are gone: the agents of an earlier run that was killed before it could
// stop them.
func KillStrays(bins ...string) {
	if len(bins) == 0 {
		return
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe"))
		if err != nil || !slices.Contains(bins, strings.TrimSuffix(exe, " (deleted)")) {
			continue
		}
		fmt.Fprintf(os.Stderr, "agentproc: killing stray agent pid %d (%s)\n", pid, exe)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for range 100 {
			if _, err := os.Stat(filepath.Join("/proc", p.Name())); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
