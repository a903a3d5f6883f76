// Package netlab builds a test LAN out of network namespaces: a Linux bridge
// in its own namespace, the root namespace plugged in with a veth (the
// kube-apiserver binds there, so agents in other namespaces reach it), and
// one namespace per host with eth0 on the bridge. Hosts can be cut off the
// LAN and plugged back in, which is a real network partition: both ends of
// the host's veth stay up, its frames just go nowhere, and its TCP
// connections stall until they time out.
//
// Every name starts with the LAN's prefix and every address is in its
// subnet, which callers take from 198.18.0.0/15 (and, with EnableIPv6, its
// IPv6 prefix, from fd00::/8): nothing is sent anywhere else. Needs root.
package netlab

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// LAN is one test network.
type LAN struct {
	prefix    string
	subnet    netip.Prefix
	subnet6   netip.Prefix // zero: IPv6 off
	macPrefix [5]byte
	hosts     map[string]*Host
}

// Host is a namespace on the LAN.
type Host struct {
	Name  string
	Netns string // its network namespace
	IP    netip.Addr
	IP6   netip.Addr // with EnableIPv6: the IPv6 prefix's n-th address
	MAC   net.HardwareAddr
	port  string // its bridge port, in the LAN namespace
}

// New describes a LAN; Setup builds it. The prefix (at most 8 characters,
// it goes into interface names) names everything, the subnet (a /24 or
// larger) numbers it: the root namespace gets .1, hosts .11 upwards (or
// the address Add gives them). The device with address .n has the MAC
// address <MAC prefix>:n, by default 02:48:4c:00:<the subnet's third byte>:n
// (see SetMACPrefix).
func New(prefix string, subnet netip.Prefix) (*LAN, error) {
	if len(prefix) > 8 {
		return nil, fmt.Errorf("netlab: prefix %q is longer than 8 characters", prefix)
	}
	if !subnet.Addr().Is4() || subnet.Bits() > 24 {
		return nil, fmt.Errorf("netlab: subnet %s is not an IPv4 /24 or larger", subnet)
	}
	subnet = subnet.Masked()
	return &LAN{
		prefix:    prefix,
		subnet:    subnet,
		macPrefix: [5]byte{0x02, 0x48, 0x4c, 0x00, subnet.Addr().As4()[2]},
		hosts:     map[string]*Host{},
	}, nil
}

// SetMACPrefix sets the first five bytes of the LAN's MAC addresses, for
// callers whose tests or reports know the MACs by heart. It must be a
// locally administered unicast prefix (first byte 0x02, 0x06, ...). Call
// it before Setup.
func (l *LAN) SetMACPrefix(p [5]byte) { l.macPrefix = p }

// EnableIPv6 gives the hosts IPv6 on eth0: a link-local address and the
// n-th address of prefix (a /64 inside fd00::/8) next to the IPv4 one.
// Duplicate address detection and router solicitations stay off, so
// nothing but the tests' own traffic crosses the LAN. The root namespace's
// device stays IPv4 only. Call it before Setup.
func (l *LAN) EnableIPv6(prefix netip.Prefix) error {
	if !prefix.Addr().Is6() || prefix.Bits() != 64 || !netip.MustParsePrefix("fd00::/8").Contains(prefix.Addr()) {
		return fmt.Errorf("netlab: IPv6 prefix %s is not a /64 inside fd00::/8", prefix)
	}
	l.subnet6 = prefix.Masked()
	return nil
}

func (l *LAN) nth6(n int) netip.Addr {
	b := l.subnet6.Addr().As16()
	b[15] = byte(n)
	return netip.AddrFrom16(b)
}

// mac is the MAC address of the device with the subnet's n-th address.
func (l *LAN) mac(n int) net.HardwareAddr {
	p := l.macPrefix
	return net.HardwareAddr{p[0], p[1], p[2], p[3], p[4], byte(n)}
}

func (l *LAN) lanNS() string    { return l.prefix + "lan" }
func (l *LAN) rootVeth() string { return l.prefix + "root" }

// RootIP is the root namespace's address on the LAN.
func (l *LAN) RootIP() netip.Addr { return l.nth(1) }

func (l *LAN) nth(n int) netip.Addr {
	b := l.subnet.Addr().As4()
	b[3] += byte(n)
	return netip.AddrFrom4(b)
}

// Host returns a host by name (nil if unknown).
func (l *LAN) Host(name string) *Host { return l.hosts[name] }

// Setup removes what an earlier run with the same prefix left, then builds
// the bridge, the root namespace's veth and one namespace per host. It
// fails when another LAN has the subnet up (see subnetFree). On error,
// Teardown removes what was built.
func (l *LAN) Setup(hosts ...string) error {
	Cleanup(l.prefix)
	if err := subnetFree(l.subnet); err != nil {
		return err
	}
	if err := ip("netns", "add", l.lanNS()); err != nil {
		return err
	}
	if err := disableIPv6(l.lanNS()); err != nil {
		return err
	}
	plen := l.subnet.Bits()
	for _, args := range [][]string{
		{"-n", l.lanNS(), "link", "set", "lo", "up"},
		{"-n", l.lanNS(), "link", "add", "br0", "type", "bridge"},
		{"-n", l.lanNS(), "link", "set", "br0", "up"},
		{"link", "add", l.rootVeth(), "address", l.mac(1).String(), "type", "veth", "peer", "name", "root", "netns", l.lanNS()},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	// No IPv6 chatter from our root-side device.
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+l.rootVeth()+"/disable_ipv6", []byte("1"), 0o644)
	for _, args := range [][]string{
		{"addr", "add", fmt.Sprintf("%s/%d", l.RootIP(), plen), "dev", l.rootVeth()},
		{"link", "set", l.rootVeth(), "up"},
		{"-n", l.lanNS(), "link", "set", "root", "master", "br0"},
		{"-n", l.lanNS(), "link", "set", "root", "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	for i, name := range hosts {
		if _, err := l.Add(name, 11+i); err != nil {
			return err
		}
	}
	return nil
}

// Add plugs one more host into a LAN that is set up, with the subnet's
// n-th address (2 to 254, not taken): e.g. a client at .100, away from the
// nodes Setup numbered from .11.
func (l *LAN) Add(name string, n int) (*Host, error) {
	if l.hosts[name] != nil {
		return nil, fmt.Errorf("netlab: host %s exists", name)
	}
	if n < 2 || n > 254 {
		return nil, fmt.Errorf("netlab: host %s: address .%d is not in 2..254", name, n)
	}
	addr := l.nth(n)
	for _, h := range l.hosts {
		if h.IP == addr {
			return nil, fmt.Errorf("netlab: host %s: %s is %s's", name, addr, h.Name)
		}
	}
	h := &Host{
		Name:  name,
		Netns: l.prefix + name,
		IP:    addr,
		MAC:   l.mac(n),
		port:  fmt.Sprintf("p%d", len(l.hosts)),
	}
	if l.subnet6.IsValid() {
		h.IP6 = l.nth6(n)
	}
	if err := l.addHost(h, l.subnet.Bits()); err != nil {
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	l.hosts[name] = h
	return h, nil
}

func (l *LAN) addHost(h *Host, plen int) error {
	if err := ip("netns", "add", h.Netns); err != nil {
		return err
	}
	if err := disableIPv6(h.Netns); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"-n", h.Netns, "link", "set", "lo", "up"},
		{"-n", l.lanNS(), "link", "add", h.port, "type", "veth", "peer", "name", "eth0", "netns", h.Netns},
		{"-n", h.Netns, "link", "set", "eth0", "address", h.MAC.String()},
		{"-n", h.Netns, "addr", "add", fmt.Sprintf("%s/%d", h.IP, plen), "dev", "eth0"},
		{"-n", h.Netns, "link", "set", "eth0", "up"},
		{"-n", l.lanNS(), "link", "set", h.port, "master", "br0"},
		{"-n", l.lanNS(), "link", "set", h.port, "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	if h.IP6.IsValid() {
		return enableIPv6(h.Netns, h.IP6)
	}
	return nil
}

// enableIPv6 turns IPv6 on for eth0 of the namespace (after disableIPv6
// turned it off everywhere): no DAD, no router solicitations, no router
// advertisements taken, and the address ip/64 (nodad: usable at once).
func enableIPv6(ns string, ip6 netip.Addr) error {
	out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
		"net.ipv6.conf.eth0.accept_dad=0", "net.ipv6.conf.eth0.dad_transmits=0",
		"net.ipv6.conf.eth0.router_solicitations=0", "net.ipv6.conf.eth0.accept_ra=0",
		"net.ipv6.conf.eth0.disable_ipv6=0").CombinedOutput()
	if err != nil {
		return fmt.Errorf("sysctl in %s: %w: %s", ns, err, bytes.TrimSpace(out))
	}
	return ip("-n", ns, "addr", "add", ip6.String()+"/64", "dev", "eth0", "nodad")
}

// Cut partitions a host from the rest of the LAN (and so from the API
// server): its bridge port leaves the bridge. Links stay up on both sides;
// nothing tells the host's TCP stack, which keeps retransmitting.
func (l *LAN) Cut(name string) error {
	h := l.hosts[name]
	if h == nil {
		return fmt.Errorf("netlab: no host %s", name)
	}
	return ip("-n", l.lanNS(), "link", "set", h.port, "nomaster")
}

// Heal plugs a cut host back in.
func (l *LAN) Heal(name string) error {
	h := l.hosts[name]
	if h == nil {
		return fmt.Errorf("netlab: no host %s", name)
	}
	return ip("-n", l.lanNS(), "link", "set", h.port, "master", "br0")
}

// Teardown removes the root veth and every namespace of the LAN.
func (l *LAN) Teardown() []error { return Cleanup(l.prefix) }

// Cleanup removes the root veth and the namespaces of a LAN with this
// prefix, whoever made them (an interrupted run).
func Cleanup(prefix string) []error {
	var errs []error
	if _, err := net.InterfaceByName(prefix + "root"); err == nil {
		if err := ip("link", "del", prefix+"root"); err != nil {
			errs = append(errs, err)
		}
	}
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := ip("netns", "del", e.Name()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// Lock takes a machine-wide lock named name, waiting for another holder
// (another run of the same suite) to finish. The lock goes with the
// process, however it ends.
func Lock(name string) (unlock func(), err error) {
	path := filepath.Join(os.TempDir(), "herald-test-"+name+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		fmt.Fprintf(os.Stderr, "netlab: another run holds %s; waiting for it to finish\n", path)
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
	}
	return func() { f.Close() }, nil
}

// InNetns runs fn on an OS thread switched into the named network
// namespace (e.g. a Host's Netns): sockets fn creates belong to that
// namespace for good. The thread is switched back before it is released;
// if that fails it stays locked, and Go discards it when the goroutine
// ends.
func InNetns(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("current netns: %w", err)
			return
		}
		defer orig.Close()
		target, err := netns.GetFromName(name)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns %s: %w", name, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering netns %s: %w", name, err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("leaving netns %s: %w", name, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// disableIPv6 keeps a namespace quiet: no DAD, no router solicitations.
func disableIPv6(ns string) error {
	out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
		"net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1").CombinedOutput()
	if err != nil && !bytes.Contains(out, []byte("No such file")) {
		return fmt.Errorf("sysctl in %s: %w: %s", ns, err, bytes.TrimSpace(out))
	}
	return nil
}
