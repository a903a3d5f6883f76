package agentproc

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/bpf"
)

// MountBPFFS mounts a fresh bpffs on dir (created), in the test's mount
// namespace. The mount namespaces `ip netns exec` makes are copies taken
// later, so an agent started with Options.BPFRoot dir pins its maps where
// the test reads them. Remove it with UnmountAll.
func MountBPFFS(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("bpf", dir, "bpf", 0, ""); err != nil {
		return fmt.Errorf("mounting bpffs on %s: %w", dir, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || uint32(st.Type) != unix.BPF_FS_MAGIC {
		return fmt.Errorf("%s is not on bpffs after mounting it (%v)", dir, err)
	}
	return nil
}

// UnmountAll detaches every mount at or below dir in the test's mount
// namespace, deepest first: before dir is removed, also by a later run
// cleaning up after one that was killed.
func UnmountAll(dir string) []error {
	mounts, err := mountinfo("self")
	if err != nil {
		return []error{err}
	}
	var under []string
	for _, m := range mounts {
		if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
			under = append(under, m.point)
		}
	}
	slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, mp := range under {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	return errs
}

// BPFFSMounts lists the mount points of bpf filesystems in the mount
// namespace of process pid (e.g. an agent's PID, to see that it mounted
// bpffs itself).
func BPFFSMounts(pid int) ([]string, error) {
	mounts, err := mountinfo(strconv.Itoa(pid))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mounts {
		if m.fstype == "bpf" {
			out = append(out, m.point)
		}
	}
	return out, nil
}

// BPFFS returns the agent's bpffs (its --bpf-root) as the test sees it:
// Options.BPFRoot if set, else the default /sys/fs/bpf of the agent's own
// mount namespace, reached through /proc/<pid>/root while the agent runs
// (under `ip netns exec` the agent mounted it itself; it goes with the
// process).
func (a *Agent) BPFFS() (string, error) {
	if a.BPFRoot != "" {
		return a.BPFRoot, nil
	}
	pid := a.PID()
	if pid == 0 {
		return "", fmt.Errorf("agent %s not running: its bpffs is gone with its mount namespace", a.Name)
	}
	return filepath.Join("/proc", strconv.Itoa(pid), "root", bpf.DefaultBPFFSRoot), nil
}

type mount struct{ point, fstype string }

// mountinfo reads /proc/<pid>/mountinfo.
func mountinfo(pid string) ([]mount, error) {
	f, err := os.Open(filepath.Join("/proc", pid, "mountinfo"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options [optional...] - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 1 {
			continue
		}
		out = append(out, mount{point: unescapeMountinfo(pf[4]), fstype: qf[0]})
	}
	return out, sc.Err()
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
