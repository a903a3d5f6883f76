// Package netlab builds a test LAN out of network namespaces: a Linux bridge
// in its own namespace, the root namespace plugged in with a veth (the
// kube-apiserver binds there, so agents in other namespaces reach it), and
// one namespace per host with eth0 on the bridge. Hosts can be cut off the
// LAN and plugged back in, which is a real network partition: both ends of
// the host's veth stay up, its frames just go nowhere, and its TCP
// connections stall until they time out.
//
// Every name starts with the LAN's prefix and every address is in its
// subnet, which callers take from 198.18.0.0/15: nothing is sent anywhere
// else. Needs root.
package netlab

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// LAN is one test network.
type LAN struct {
	prefix string
	subnet netip.Prefix
	hosts  map[string]*Host
}

// Host is a namespace on the LAN.
type Host struct {
	Name  string
	Netns string // its network namespace
	IP    netip.Addr
	MAC   net.HardwareAddr
	port  string // its bridge port, in the LAN namespace
}

// New describes a LAN; Setup builds it. The prefix (at most 8 characters,
// it goes into interface names) names everything, the subnet (a /24 or
// larger) numbers it: the root namespace gets .1, hosts .11 upwards.
func New(prefix string, subnet netip.Prefix) (*LAN, error) {
	if len(prefix) > 8 {
		return nil, fmt.Errorf("netlab: prefix %q is longer than 8 characters", prefix)
	}
	if !subnet.Addr().Is4() || subnet.Bits() > 24 {
		return nil, fmt.Errorf("netlab: subnet %s is not an IPv4 /24 or larger", subnet)
	}
	return &LAN{prefix: prefix, subnet: subnet.Masked(), hosts: map[string]*Host{}}, nil
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
// the bridge, the root namespace's veth and one namespace per host. On
// error, Teardown removes what was built.
func (l *LAN) Setup(hosts ...string) error {
	Cleanup(l.prefix)
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
		{"link", "add", l.rootVeth(), "type", "veth", "peer", "name", "root", "netns", l.lanNS()},
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
		h := &Host{
			Name:  name,
			Netns: l.prefix + name,
			IP:    l.nth(11 + i),
			MAC:   net.HardwareAddr{0x02, 0x48, 0x4c, 0x00, byte(l.subnet.Addr().As4()[2]), byte(11 + i)},
			port:  fmt.Sprintf("p%d", i),
		}
		if err := l.addHost(h, plen); err != nil {
			return fmt.Errorf("host %s: %w", name, err)
		}
		l.hosts[name] = h
	}
	return nil
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
	return nil
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
