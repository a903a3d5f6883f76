package cpvip

import (
	"bytes"
	"context"
	"errors"
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

// Systemd is systemd, the Debian package's, booted as PID 1 of a node: in
// new PID, mount, UTS and IPC namespaces inside the node's network
// namespace, as a container manager would boot it, so that a test can
// install and run a unit exactly as a user does on a host (systemctl
// enable --now, kill, stop, journalctl).
//
// Nothing it does reaches the machine: it has its own /etc (a copy of the
// machine's, without the machine's enabled units), /run, /tmp, /var/tmp,
// /var/log/journal and bpffs, all private to its mount namespace; /sys is
// read-only to it (so no udev); and the units of the machine's boot that
// would touch the kernel's global state or the machine's files
// (tmpfiles, sysctl, modules, binfmt, fsck, swap, the clock...) are
// masked. It boots to a target of its own that starts nothing else, and
// runs in a cgroup of its own in every hierarchy, removed with it.
type Systemd struct {
	Node *CPNode
	Dir  string // etc/ (its /etc), bin/ (its /usr/local/bin), the boot log
	pid  int    // its PID 1, in the machine's PID namespace
	proc *groupProc
}

// systemdMasked are the units of a machine's boot that Systemd must not run.
var systemdMasked = []string{
	"systemd-udevd.service", "systemd-udevd-control.socket", "systemd-udevd-kernel.socket",
	"systemd-udev-trigger.service", "systemd-udev-settle.service",
	"systemd-modules-load.service", "systemd-sysctl.service", "systemd-binfmt.service",
	"systemd-tmpfiles-setup.service", "systemd-tmpfiles-setup-dev.service", "systemd-tmpfiles-clean.timer",
	"systemd-remount-fs.service", "systemd-fsck-root.service", "systemd-fsck@.service", "swap.target",
	"systemd-random-seed.service", "systemd-timesyncd.service", "systemd-repart.service",
	"systemd-firstboot.service", "systemd-machine-id-commit.service", "systemd-sysusers.service",
	"systemd-pcrphase.service", "systemd-pcrphase-sysinit.service", "systemd-pstore.service",
	"systemd-journal-flush.service", "systemd-update-utmp.service", "kmod-static-nodes.service",
	"proc-sys-fs-binfmt_misc.automount", "proc-sys-fs-binfmt_misc.mount", "dev-hugepages.mount",
	"dev-mqueue.mount", "sys-kernel-debug.mount", "sys-kernel-tracing.mount", "sys-kernel-config.mount",
	"sys-fs-fuse-connections.mount", "systemd-ask-password-console.path", "ldconfig.service",
}

// systemdTarget is what Systemd boots to: nothing; the test starts units.
const systemdTarget = "herald-test.target"

// systemdBoot is the script that runs as PID 1 of the new namespaces, then
// execs systemd; $1 is Systemd.Dir. It enters systemd's cgroups while it
// still sees the machine's cgroup hierarchies, then mounts a sysfs of the
// node's network namespace, read-only, in place of the machine's (systemd
// mounts the cgroup hierarchies on it again).
func systemdBoot(cgroup string) string {
	return cgroups.JoinScript(cgroup) + `
set -e
w=$1
mount --make-rprivate /
mount --bind "$w/etc" /etc
mount --bind "$w/bin" /usr/local/bin
for d in /run /tmp /var/tmp /var/log/journal; do mount -t tmpfs tmpfs "$d"; done
mount -t proc proc /proc
umount -R /sys
mount -t sysfs -o ro sysfs /sys
mount -t bpf bpf /sys/fs/bpf
exec env container=herald-test /lib/systemd/systemd --unit=` + systemdTarget + ` --log-target=console --show-status=no
`
}

// BootSystemd boots systemd on node n with etc's files added to its /etc
// (path relative to /etc: content) and bins in its /usr/local/bin, and
// waits until it has reached its target.
func (n *CPNode) BootSystemd(etc map[string][]byte, bins ...string) (*Systemd, error) {
	for _, need := range []string{"/lib/systemd/systemd", "/var/log/journal"} {
		if _, err := os.Stat(need); err != nil {
			return nil, fmt.Errorf("booting systemd: %w (install/dev/ensure-tools.sh installs the systemd package)", err)
		}
	}
	s := &Systemd{Node: n, Dir: filepath.Join(n.Dir, "systemd")}
	if err := s.prepare(etc, bins); err != nil {
		return nil, err
	}
	if err := cgroups.Ensure(s.cgroup()); err != nil {
		return nil, err
	}
	script := filepath.Join(s.Dir, "boot.sh")
	if err := os.WriteFile(script, []byte(systemdBoot(s.cgroup())), 0o755); err != nil {
		return nil, errors.Join(err, cgroups.Remove(s.cgroup(), time.Second))
	}
	// nsenter, not ip netns exec: the machine's /sys, with its cgroup
	// hierarchies, stays in view until the script has entered its cgroups.
	argv := []string{"nsenter", "--net=/run/netns/" + n.Host.Netns,
		"unshare", "--pid", "--fork", "--kill-child", "--mount", "--uts", "--ipc", "sh", script, s.Dir}
	p, err := startGroupArgv("systemd in "+n.Host.Netns, filepath.Join(s.Dir, "boot.log"), argv)
	if err != nil {
		return nil, errors.Join(err, cgroups.Remove(s.cgroup(), time.Second))
	}
	s.proc = p
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ; ctx.Err() == nil; time.Sleep(100 * time.Millisecond) {
		if closed(p.done) {
			return nil, errors.Join(fmt.Errorf("systemd in %s exited:\n%s", n.Host.Netns, s.BootLog()), s.Stop())
		}
		if s.pid == 0 {
			s.pid = firstChild(p.Pid())
			continue
		}
		if out, err := s.Systemctl("is-active", systemdTarget); err == nil && strings.TrimSpace(out) == "active" {
			return s, nil
		}
	}
	err = fmt.Errorf("systemd in %s did not reach %s within a minute:\n%s", n.Host.Netns, systemdTarget, s.BootLog())
	return nil, errors.Join(err, s.Stop())
}

// prepare writes its /etc (the machine's, its enabled units left out, the
// masks and etc's files added) and its /usr/local/bin.
func (s *Systemd) prepare(etc map[string][]byte, bins []string) error {
	if err := os.RemoveAll(s.Dir); err != nil {
		return err
	}
	etcDir, binDir := filepath.Join(s.Dir, "etc"), filepath.Join(s.Dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", "/etc", etcDir).CombinedOutput(); err != nil {
		return fmt.Errorf("copying /etc: %v: %s", err, out)
	}
	units := filepath.Join(etcDir, "systemd", "system")
	if err := os.RemoveAll(units); err != nil {
		return err
	}
	if err := os.MkdirAll(units, 0o755); err != nil {
		return err
	}
	for _, u := range systemdMasked {
		if err := os.Symlink("/dev/null", filepath.Join(units, u)); err != nil {
			return err
		}
	}
	target := "[Unit]\nDescription=Herald's test boot: nothing but what the test starts\nDefaultDependencies=no\n"
	if err := os.WriteFile(filepath.Join(units, systemdTarget), []byte(target), 0o644); err != nil {
		return err
	}
	for path, content := range etc {
		full := filepath.Join(etcDir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, content, 0o600); err != nil {
			return err
		}
	}
	for _, bin := range bins {
		if out, err := exec.Command("cp", bin, binDir).CombinedOutput(); err != nil {
			return fmt.Errorf("copying %s: %v: %s", bin, err, out)
		}
	}
	return nil
}

// cgroup is its cgroup in every hierarchy.
func (s *Systemd) cgroup() string { return "/herald-test-systemd-" + s.Node.Name }

// firstChild is the first child of process pid (0 if none yet): unshare's
// child is the new namespaces' PID 1.
func firstChild(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	child, _ := strconv.Atoi(f[0])
	return child
}

// In runs argv in its mount namespace (its /etc, /run, the unit's
// sockets) and the node's network namespace.
func (s *Systemd) In(argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Its PID namespace too: systemctl talks only to the systemd of its own.
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(s.pid), "-m", "-n", "-p", "--"}, argv...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s on %s: %w: %s", strings.Join(argv, " "), s.Node.Name, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(out), nil
}

// Systemctl runs systemctl against it.
func (s *Systemd) Systemctl(args ...string) (string, error) {
	return s.In(append([]string{"systemctl", "--no-pager"}, args...)...)
}

// Show is one property of a unit (systemctl show -P).
func (s *Systemd) Show(unit, property string) string {
	out, _ := s.Systemctl("show", "-P", property, unit)
	return strings.TrimSpace(out)
}

// Journal is the last lines of a unit's journal.
func (s *Systemd) Journal(unit string, lines int) string {
	out, err := s.In("journalctl", "--no-pager", "-u", unit, "-n", strconv.Itoa(lines))
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("----- journal of %s on %s -----\n%s", unit, s.Node.Name, out)
}

// BootLog is the boot script's output: its command line and, should it
// fail, why (systemd itself logs to the console).
func (s *Systemd) BootLog() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "boot.log"))
	return string(b)
}

// Stop kills its PID 1, and with it everything in its PID namespace, and
// removes its cgroups. It may be called again.
func (s *Systemd) Stop() error {
	if s.proc == nil {
		return nil
	}
	if s.pid != 0 {
		_ = syscall.Kill(s.pid, syscall.SIGKILL)
	}
	err := s.proc.kill()
	s.proc = nil
	// Whatever systemd started and left is in its cgroups.
	return errors.Join(err, cgroups.Kill(s.cgroup(), 10*time.Second), cgroups.Remove(s.cgroup(), 10*time.Second))
}
