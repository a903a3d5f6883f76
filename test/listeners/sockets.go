// Package listeners finds the sockets that wait for traffic in a network
// namespace, and the processes that hold them, from /proc: what `ss -ltunp`
// shows, as values a test can judge. The real-cluster suite uses it to
// prove that what the harness runs in the host's namespace is reachable
// from loopback and the harness's own devices only.
package listeners

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Socket is a TCP socket in LISTEN or a UDP socket bound and not
// connected: either takes whatever reaches its address and port.
type Socket struct {
	Proto string // tcp, tcp6, udp, udp6
	Addr  netip.AddrPort
	Inode uint64
}

func (s Socket) String() string { return s.Proto + " " + s.Addr.String() }

// The kernel's socket states as /proc/net prints them (include/net/tcp_states.h).
const (
	stateListen = "0A" // TCP_LISTEN
	stateClose  = "07" // TCP_CLOSE: a UDP socket with no peer
)

// Listening reads the socket tables of the network namespace that procNet
// shows ("/proc/self/net", "/proc/<pid>/net").
func Listening(procNet string) ([]Socket, error) {
	var out []Socket
	for _, proto := range []string{"tcp", "tcp6", "udp", "udp6"} {
		want := stateListen
		if strings.HasPrefix(proto, "udp") {
			want = stateClose
		}
		socks, err := readTable(filepath.Join(procNet, proto), proto, want)
		if err != nil {
			return nil, err
		}
		out = append(out, socks...)
	}
	return out, nil
}

// readTable parses one table; lines look like
//
//	sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
//	0: 0100007F:0CEA 00000000:0000 0A ...
func readTable(path, proto, state string) ([]Socket, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil // no IPv6 in this kernel
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Socket
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != state {
			continue
		}
		if strings.HasPrefix(proto, "udp") && !strings.HasSuffix(fields[2], ":0000") {
			continue // connected to a peer: it takes nothing else
		}
		addr, err := parseAddrPort(fields[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
		}
		inode, err := strconv.ParseUint(fields[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: inode: %w", path, sc.Text(), err)
		}
		out = append(out, Socket{Proto: proto, Addr: addr, Inode: inode})
	}
	return out, sc.Err()
}

// parseAddrPort parses "0100007F:0CEA": the address as the kernel keeps it
// (network order) printed as 32-bit words in the machine's order, then the
// port in hex.
func parseAddrPort(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || (len(a) != 8 && len(a) != 32) {
		return netip.AddrPort{}, fmt.Errorf("address %q", s)
	}
	b := make([]byte, 0, 16)
	for i := 0; i < len(a); i += 8 {
		w, err := strconv.ParseUint(a[i:i+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("address %q: %w", s, err)
		}
		b = binary.NativeEndian.AppendUint32(b, uint32(w))
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q: %w", s, err)
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr, uint16(port)), nil
}
