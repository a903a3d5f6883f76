package cpvip

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// groupStopTimeout bounds a SIGTERM stop before the process group is
// killed: keepalived waits up to its child_wait_time (5 s) for its
// children.
const groupStopTimeout = 10 * time.Second

// runMarker starts each run's part of a log.
const runMarker = "==== "

// groupProc is a process run with `ip netns exec` (which execs it in
// place: the pid is the program's) as the leader of a process group of its
// own, so that it and whatever it forked are killed at once. Its output is
// appended to a log file. It dies with the test process (parent-death
// signal).
type groupProc struct {
	what string // for messages: "keepalived in hka-ka1"
	cmd  *exec.Cmd
	done chan struct{} // closed when the leader exited
}

func startGroup(what, netns, logPath string, argv []string) (*groupProc, error) {
	return startGroupArgv(what, logPath, append([]string{"ip", "netns", "exec", netns}, argv...))
}

// startGroupArgv is startGroup for a command line that enters the
// namespace itself.
func startGroupArgv(what, logPath string, argv []string) (*groupProc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logf, "%s%s: %s\n", runMarker, time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", what, err)
	}
	p := &groupProc{what: what, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the leader's process id, also its process group's.
func (p *groupProc) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the leader exited.
func (p *groupProc) Exited() <-chan struct{} { return p.done }

// kill SIGKILLs the whole process group and returns when every process of
// it is gone (the leader's children are not ours to wait for).
func (p *groupProc) kill() error {
	pgid := p.Pid()
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s: %w", p.what, err)
	}
	<-p.done
	deadline := time.Now().Add(groupStopTimeout)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: process group %d still alive %s after SIGKILL", p.what, pgid, groupStopTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// stop sends SIGTERM to the leader and waits for it; then, or after
// groupStopTimeout, it kills what is left of the group.
func (p *groupProc) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s: %w", p.what, err)
	}
	select {
	case <-p.done:
		return p.kill() // a child left behind; a no-op otherwise
	case <-time.After(groupStopTimeout):
		if err := p.kill(); err != nil {
			return err
		}
		return fmt.Errorf("%s did not exit within %s of SIGTERM; killed", p.what, groupStopTimeout)
	}
}
