package listeners

import (
	"net"
	"net/netip"
	"os"
	"slices"
	"testing"
)

// find returns the socket of the table bound to addr.
func find(t *testing.T, socks []Socket, proto string, addr netip.AddrPort) Socket {
	t.Helper()
	for _, s := range socks {
		if s.Proto == proto && s.Addr == addr {
			return s
		}
	}
	t.Fatalf("no %s socket on %s among %v", proto, addr, socks)
	return Socket{}
}

// TestFindsOwnSockets opens real sockets and finds them, with their
// addresses and ports, in this process's namespace, held by this process:
// a loopback TCP listener, a loopback UDP socket, and a UDP socket on the
// unspecified address (nothing is sent to it), which Confined rejects.
func TestFindsOwnSockets(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lo, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	wide, err := net.ListenPacket("udp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer wide.Close()
	want := map[string]netip.AddrPort{
		"tcp": ln.Addr().(*net.TCPAddr).AddrPort(),
		"udp": lo.LocalAddr().(*net.UDPAddr).AddrPort(),
	}
	wild := wide.LocalAddr().(*net.UDPAddr).AddrPort()
	wild = netip.AddrPortFrom(netip.IPv4Unspecified(), wild.Port())

	socks, err := Listening("/proc/self/net")
	if err != nil {
		t.Fatal(err)
	}
	procs, err := Processes()
	if err != nil {
		t.Fatal(err)
	}
	var self Process
	for _, p := range procs {
		if p.PID == os.Getpid() {
			self = p
		}
	}
	if self.PID == 0 || self.PPID != os.Getppid() {
		t.Fatalf("this process (pid %d, ppid %d) is not among the processes as such: %+v", os.Getpid(), os.Getppid(), self)
	}
	ns, err := NetNS("/proc/self/ns/net")
	if err != nil || self.NetNS != ns {
		t.Fatalf("network namespace %d, want %d (%v)", self.NetNS, ns, err)
	}
	for proto, addr := range want {
		s := find(t, socks, proto, addr)
		if !slices.Contains(self.Sockets, s.Inode) {
			t.Errorf("%s: inode %d is not among this process's sockets %v", s, s.Inode, self.Sockets)
		}
		if !Confined(s.Addr.Addr(), nil, func(string) bool { return false }) {
			t.Errorf("%s: not confined", s)
		}
	}
	s := find(t, socks, "udp", wild)
	if !slices.Contains(self.Sockets, s.Inode) {
		t.Errorf("%s: inode %d is not among this process's sockets", s, s.Inode)
	}
	if Confined(s.Addr.Addr(), nil, func(string) bool { return true }) {
		t.Errorf("%s: confined", s)
	}
}

// TestFindsIPv6Listener: the IPv6 tables' addresses are four words, each
// in the machine's order.
func TestFindsIPv6Listener(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatalf("IPv6 loopback: %v", err)
	}
	defer ln.Close()
	socks, err := Listening("/proc/self/net")
	if err != nil {
		t.Fatal(err)
	}
	find(t, socks, "tcp6", ln.Addr().(*net.TCPAddr).AddrPort())
}

func TestConfined(t *testing.T) {
	holders := map[netip.Addr][]string{
		netip.MustParseAddr("198.18.16.1"): {"hrc-root"},
		netip.MustParseAddr("192.0.2.1"):   {"eth0"},
		netip.MustParseAddr("198.18.0.1"):  {"hrc-x", "eth1"},
	}
	own := func(d string) bool { return d == "hrc-root" || d == "hrc-x" }
	for addr, want := range map[string]bool{
		"127.0.0.1":        true,
		"127.5.6.7":        true,
		"::1":              true,
		"::ffff:127.0.0.1": true,
		"198.18.16.1":      true,  // only the caller's device holds it
		"0.0.0.0":          false, // every device
		"::":               false,
		"192.0.2.1":        false, // the machine's own device
		"198.18.0.1":       false, // one of the caller's, and another
		"198.18.99.1":      false, // no device: nothing to vouch for it
	} {
		if got := Confined(netip.MustParseAddr(addr), holders, own); got != want {
			t.Errorf("Confined(%s) = %v, want %v", addr, got, want)
		}
	}
}
