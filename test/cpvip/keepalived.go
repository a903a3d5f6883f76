package cpvip

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/agentproc"
)

// KeepalivedBin is the Debian package's daemon (install/dev/ensure-tools.sh
// installs it).
const KeepalivedBin = "/usr/sbin/keepalived"

// keepalivedStopTimeout bounds a SIGTERM stop before the daemon is killed:
// keepalived waits up to its child_wait_time (5 s) for its children.
const keepalivedStopTimeout = 10 * time.Second

// Keepalived is one node's keepalived, run in the foreground inside the
// node's network namespace. Everything it writes is in its directory: the
// configuration, the pid files of its parent and VRRP processes, its log;
// nothing in /etc or /run is shared between nodes. It dies with the test
// process (parent-death signal; its VRRP child then gets SIGTERM from
// keepalived itself).
type Keepalived struct {
	Netns string
	Dir   string
	cmd   *exec.Cmd
	done  chan struct{} // closed when the parent process exited
}

// StartKeepalived writes conf to dir/keepalived.conf, has keepalived test
// it (inside netns, where its interface is: any warning is an error), and
// starts keepalived with it in network namespace netns: VRRP only (no health checker, no
// BFD), logging to dir/keepalived.log instead of syslog. The parent
// process leads a process group of its own, which Kill signals as a whole.
func StartKeepalived(netns, dir, conf string) (*Keepalived, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	// keepalived skips what it cannot use, with a warning, and runs with
	// the rest: its configuration test says whether it takes all of it.
	if out, err := exec.Command("ip", "netns", "exec", netns, KeepalivedBin, "--config-test", "--use-file", confPath).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		return nil, fmt.Errorf("keepalived --config-test of %s in %s: %v: %s", confPath, netns, err, bytes.TrimSpace(out))
	}
	logf, err := os.OpenFile(filepath.Join(dir, "keepalived.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	argv := []string{"netns", "exec", netns, KeepalivedBin,
		"--dont-fork", "--log-console", "--no-syslog", "--log-detail",
		"--vrrp", "--no_bfd",
		"--use-file", confPath,
		"--pid", filepath.Join(dir, "keepalived.pid"),
		"--vrrp_pid", filepath.Join(dir, "vrrp.pid"),
		"--checkers_pid", filepath.Join(dir, "checkers.pid"),
		"--bfd_pid", filepath.Join(dir, "bfd.pid"),
	}
	fmt.Fprintf(logf, "%s%s: ip %s\n", runMarker, time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))
	// ip execs keepalived in place: the pid is keepalived's.
	cmd := exec.Command("ip", argv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting keepalived in %s: %w", netns, err)
	}
	k := &Keepalived{Netns: netns, Dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(k.done)
	}()
	return k, nil
}

// Pid is the keepalived parent's process id, also its process group's.
func (k *Keepalived) Pid() int { return k.cmd.Process.Pid }

// Exited is closed when the keepalived parent exited.
func (k *Keepalived) Exited() <-chan struct{} { return k.done }

// Kill SIGKILLs keepalived's whole process group at once, parent, VRRP
// process and any check script running, as a crash would: nothing sends a
// last advert or removes the VIP, which stays on the node's interface (and
// its kernel keeps answering ARP for it) until someone deletes it. It
// returns when every process of the group is gone.
func (k *Keepalived) Kill() error {
	pgid := k.Pid()
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing keepalived in %s: %w", k.Netns, err)
	}
	<-k.done
	// The VRRP process is not our child: wait until the group is empty.
	deadline := time.Now().Add(keepalivedStopTimeout)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("keepalived in %s: process group %d still alive %s after SIGKILL", k.Netns, pgid, keepalivedStopTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// Stop is keepalived's clean shutdown (SIGTERM): its instances send a
// priority 0 advert, so a backup takes over at once, and it removes the
// VIPs. After keepalivedStopTimeout it kills.
func (k *Keepalived) Stop() error {
	if err := k.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping keepalived in %s: %w", k.Netns, err)
	}
	select {
	case <-k.done:
		return k.Kill() // reaps any VRRP process left behind; a no-op otherwise
	case <-time.After(keepalivedStopTimeout):
		if err := k.Kill(); err != nil {
			return err
		}
		return fmt.Errorf("keepalived in %s did not exit within %s of SIGTERM; killed", k.Netns, keepalivedStopTimeout)
	}
}

// Logs returns the last maxLines lines of keepalived's log, every run that
// used the directory included.
func (k *Keepalived) Logs(maxLines int) string {
	b, err := os.ReadFile(filepath.Join(k.Dir, "keepalived.log"))
	if err != nil {
		return fmt.Sprintf("keepalived log of %s: %v", k.Netns, err)
	}
	return fmt.Sprintf("----- keepalived in %s (%s) -----\n%s\n", k.Netns, k.Dir, agentproc.Tail(string(b), maxLines))
}

// runMarker starts each run's part of the log.
const runMarker = "==== "

// keepalivedState matches keepalived's state transitions in its log:
// "(vip4) Entering MASTER STATE".
var keepalivedState = regexp.MustCompile(`\((\S+)\) Entering (\S+) STATE`)

// State is the state the latest keepalived run in the directory last
// logged for instance (vip4, vip6): BACKUP, MASTER or FAULT; "" before its
// first transition.
func (k *Keepalived) State(instance string) string {
	b, err := os.ReadFile(filepath.Join(k.Dir, "keepalived.log"))
	if err != nil {
		return ""
	}
	run := string(b)
	if i := strings.LastIndex(run, runMarker); i >= 0 {
		run = run[i:]
	}
	state := ""
	for _, m := range keepalivedState.FindAllStringSubmatch(run, -1) {
		if m[1] == instance {
			state = m[2]
		}
	}
	return state
}
