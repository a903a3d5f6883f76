package cpvip

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/agentproc"
)

// process is one daemon of a node (etcd, kube-apiserver, the agent) run
// with `ip netns exec` in the node's namespace. Each start is a new run
// with its own log, <dir>/<name>-<run>.log, kept for Logs. The daemon dies
// with the test process (parent-death signal): a run that is killed leaves
// no daemon behind, only its namespaces, which the next Up removes.
type process struct {
	name  string // file names and messages
	netns string
	dir   string

	mu   sync.Mutex
	argv []string // of the latest start
	runs int
	cmd  *exec.Cmd
	done chan struct{} // closed when the latest run exited
}

func (p *process) logPath(run int) string {
	return filepath.Join(p.dir, fmt.Sprintf("%s-%d.log", p.name, run))
}

// start runs argv as a new run; it fails if one runs.
func (p *process) start(argv []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !closed(p.done) {
		return fmt.Errorf("%s in %s already runs", p.name, p.netns)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	p.runs++
	logf, err := os.Create(p.logPath(p.runs))
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "==== %s: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))
	// ip execs the program in place: the pid is the daemon's.
	cmd := exec.Command("ip", append([]string{"netns", "exec", p.netns}, argv...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s in %s: %w", p.name, p.netns, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	p.argv, p.cmd, p.done = argv, cmd, done
	return nil
}

// restart starts a new run with the latest command line.
func (p *process) restart() error {
	p.mu.Lock()
	argv := p.argv
	p.mu.Unlock()
	if argv == nil {
		return fmt.Errorf("%s in %s never ran", p.name, p.netns)
	}
	return p.start(argv)
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// running reports whether the latest run is alive (frozen counts), and its
// pid.
func (p *process) running() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || closed(p.done) {
		return 0, false
	}
	return p.cmd.Process.Pid, true
}

// exited is closed once the latest run exited (nil before the first).
func (p *process) exited() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// stopTimeout bounds a SIGTERM stop before the process is killed.
const stopTimeout = 30 * time.Second

// stop sends sig (after SIGCONT: a frozen process cannot handle it) and
// waits for the exit; after stopTimeout it kills. Nothing to do if the
// latest run is not alive.
func (p *process) stop(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || closed(done) {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s in %s did not exit within %s of %v; killed", p.name, p.netns, stopTimeout, sig)
	}
}

// latestLog is the latest run's log ("" before the first).
func (p *process) latestLog() string {
	p.mu.Lock()
	runs := p.runs
	p.mu.Unlock()
	if runs == 0 {
		return ""
	}
	data, _ := os.ReadFile(p.logPath(runs))
	return string(data)
}

// logs returns every run's log, oldest first, each cut to its last
// maxLines lines.
func (p *process) logs(maxLines int) string {
	p.mu.Lock()
	runs := p.runs
	p.mu.Unlock()
	var b strings.Builder
	for i := 1; i <= runs; i++ {
		data, err := os.ReadFile(p.logPath(i))
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "----- %s in %s, run %d (%s) -----\n%s\n", p.name, p.netns, i, p.logPath(i), agentproc.Tail(string(data), maxLines))
	}
	return b.String()
}
