package listeners

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Process is what /proc says of one process: enough to tell who it is,
// where it runs and which sockets it holds.
type Process struct {
	PID, PPID int
	Comm      string // the kernel's name, at most 15 characters
	Exe       string // empty for kernel threads and when unreadable
	NetNS     uint64 // the inode of its network namespace
	Cgroups   []string
	Sockets   []uint64 // inodes of the sockets among its descriptors
}

func (p Process) String() string {
	name := p.Comm
	if p.Exe != "" {
		name = p.Exe
	}
	return fmt.Sprintf("%s (pid %d)", name, p.PID)
}

// Processes lists every process. One that exits while it is read is left
// out.
func Processes() ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readProcess(pid); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func readProcess(pid int) (Process, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	p := Process{PID: pid}
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return p, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(stat)
	open, shut := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || shut < open {
		return p, fmt.Errorf("%s/stat: %q", dir, s)
	}
	p.Comm = s[open+1 : shut]
	rest := strings.Fields(s[shut+1:])
	if len(rest) < 2 {
		return p, fmt.Errorf("%s/stat: %q", dir, s)
	}
	if p.PPID, err = strconv.Atoi(rest[1]); err != nil {
		return p, fmt.Errorf("%s/stat: ppid: %w", dir, err)
	}
	p.Exe, _ = os.Readlink(filepath.Join(dir, "exe"))
	if p.NetNS, err = NetNS(filepath.Join(dir, "ns", "net")); err != nil {
		return p, err
	}
	if cg, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
			// hierarchy-ID:controllers:path
			if f := strings.SplitN(line, ":", 3); len(f) == 3 {
				p.Cgroups = append(p.Cgroups, f[2])
			}
		}
	}
	p.Sockets, err = sockets(filepath.Join(dir, "fd"))
	return p, err
}

// sockets returns the inodes of the sockets among a process's descriptors.
func sockets(fdDir string) ([]uint64, error) {
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if v, ok := strings.CutPrefix(link, "socket:["); ok {
			if inode, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64); err == nil {
				out = append(out, inode)
			}
		}
	}
	return out, nil
}

// NetNS returns the inode of a network namespace file (/proc/<pid>/ns/net,
// /var/run/netns/<name>): two files name the same namespace when their
// inodes match.
func NetNS(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("network namespace %s: %w", path, err)
	}
	return st.Ino, nil
}
