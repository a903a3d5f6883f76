package binarypages

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mapping is one line of /proc/PID/maps.
type mapping struct {
	start, end uintptr
	perms      string
	path       string
}

// parseMaps reads the lines of /proc/PID/maps: "start-end perms offset dev
// inode path", the path optional and possibly with spaces.
func parseMaps(data []byte) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		fields := strings.SplitN(line, " ", 6)
		if len(fields) < 5 {
			return nil, fmt.Errorf("maps line %q: too few fields", line)
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end < start {
			return nil, fmt.Errorf("maps line %q: bad address range", line)
		}
		m := mapping{start: uintptr(start), end: uintptr(end), perms: fields[1]}
		if len(fields) == 6 {
			m.path = strings.TrimLeft(fields[5], " ")
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// readOnlyOf returns the mappings of the file at path that the process
// cannot write: code, read-only data, the runtime's tables. Writable ones
// (.data, .bss) are private copies; paging them out would lose nothing, but
// they are not the start's pages either.
func readOnlyOf(maps []mapping, path string) []mapping {
	var out []mapping
	for _, m := range maps {
		if m.path == path && !strings.Contains(m.perms, "w") {
			out = append(out, m)
		}
	}
	return out
}

// Release pages out the read-only mappings of the running binary and
// returns how many it advised. A page the agent uses again is read again
// from the file, as after the kernel's own reclaim.
func Release() (int, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	maps, err := parseMaps(data)
	if err != nil {
		return 0, err
	}
	ro := readOnlyOf(maps, exe)
	if len(ro) == 0 {
		return 0, fmt.Errorf("no read-only mapping of %s in /proc/self/maps", exe)
	}
	for _, m := range ro {
		// The range is the kernel's own mapping, so no Go memory is
		// involved: a raw syscall, without making a slice of it.
		_, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_PAGEOUT)
		if errno != 0 {
			return 0, fmt.Errorf("madvise(MADV_PAGEOUT) of %s %x-%x: %w", exe, m.start, m.end, errno)
		}
	}
	return len(ro), nil
}

// fileRSS is RssFile of /proc/self/status, in KiB.
func fileRSS() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no RssFile in /proc/self/status")
}
