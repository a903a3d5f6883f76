package netlab

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// TCPStat reads one of the kernel's TcpExt counters (/proc/net/netstat)
// in the host's namespace, e.g. TCPMD5Failure or TCPMD5NotFound.
func (h *Host) TCPStat(name string) (int, error) {
	out, err := exec.Command("ip", "netns", "exec", h.Netns, "cat", "/proc/net/netstat").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("reading /proc/net/netstat in %s: %v: %s", h.Netns, err, out)
	}
	return netstatCounter(string(out), name)
}

// netstatCounter finds a counter in /proc/net/netstat's text: pairs of
// lines, the names then the values of one group.
func netstatCounter(text, name string) (int, error) {
	lines := strings.Split(text, "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		keys, vals := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		for j, k := range keys {
			if k == name && j < len(vals) {
				return strconv.Atoi(vals[j])
			}
		}
	}
	return 0, fmt.Errorf("no %s in /proc/net/netstat (a kernel without it?)", name)
}
