package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a contender's running process; its output goes to a log file
// that is kept when the measurement failed.
type proc struct {
	label   string
	cmd     *exec.Cmd
	logPath string
	tmpDir  string
	// pprofPort serves herald-agent's profiles (-profile-dir), 0 if none.
	pprofPort int
	exited    chan struct{}
	waitErr   error
}

func newProc(label string) (*proc, error) {
	tmp, err := os.MkdirTemp("", "herald-bench-")
	if err != nil {
		return nil, err
	}
	return &proc{label: label, tmpDir: tmp, exited: make(chan struct{})}, nil
}

func (p *proc) start(path string, args []string) error {
	logFile, err := os.CreateTemp("", "herald-bench-*.log")
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	p.logPath = logFile.Name()
	p.cmd = exec.Command(path, args...)
	p.cmd.Stdout = logFile
	p.cmd.Stderr = logFile
	logf("starting %s %s", path, strings.Join(args, " "))
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.label, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits for the process to exit, with SIGKILL after
// 15s (MetalLB's controller works through its queue before it exits): the
// measurement is over by then, so that is not an error.
func (p *proc) stop() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited early: %v", p.label, p.waitErr)
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(15 * time.Second):
		logf("%s did not stop within 15s of SIGTERM; killing it", p.label)
		_ = p.cmd.Process.Kill()
		<-p.exited
		return nil
	}
}

// cleanup removes the log, or keeps it and prints its tail when failed.
func (p *proc) cleanup(failed bool) {
	if failed {
		fmt.Fprintf(os.Stderr, "bench-e2e: %s log kept at %s; its tail:\n%s\n", p.label, p.logPath, tail(p.logPath, 30))
	} else {
		_ = os.Remove(p.logPath)
	}
	_ = os.RemoveAll(p.tmpDir)
}

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat; 100
// on every Linux architecture Go runs on.
const clockTick = 100

// cpuTime is utime+stime of a process.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after it
	// start after its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ut+st) * time.Second / clockTick, nil
}

// memory is a process's memory from /proc/PID/status, in KiB.
type memory struct {
	rss, hwm   int64 // VmRSS, VmHWM (peak RSS)
	anon, file int64 // RssAnon (heap, stacks), RssFile (the binary's pages)
}

// procMem reads a process's memory from /proc/PID/status.
func procMem(pid int) (m memory, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 {
			continue
		}
		var v *int64
		switch f[0] {
		case "VmRSS:":
			v = &m.rss
		case "VmHWM:":
			v = &m.hwm
		case "RssAnon:":
			v = &m.anon
		case "RssFile:":
			v = &m.file
		default:
			continue
		}
		if *v, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return memory{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
		}
	}
	if m.rss == 0 {
		return memory{}, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
	}
	return m, nil
}

func pidFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// loadAvg returns the 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
