package netlab

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Pod is a namespace behind a host, as a container behind its node: a veth
// from the host to the pod, the pod network's first address on the host's
// side and the second in the pod, routed from the rest of the LAN through
// the host.
type Pod struct {
	Name  string
	Netns string
	Host  *Host
	IP    netip.Addr // the pod network's .2
	IP6   netip.Addr // ::2 of its IPv6 network, if it has one
}

// AddPod gives host a pod network and one pod in it: net4 is an IPv4 /24
// inside 198.18.0.0/15 outside the LAN's subnet, net6 (optional, zero for
// none; needs EnableIPv6) a /64 inside fd00::/8. The host forwards, and
// every other host of the LAN routes the networks through it. One pod per
// host and name.
func (l *LAN) AddPod(host, name string, net4, net6 netip.Prefix) (*Pod, error) {
	h := l.hosts[host]
	if h == nil {
		return nil, fmt.Errorf("netlab: no host %s", host)
	}
	if !net4.Addr().Is4() || net4.Bits() != 24 || !netip.MustParsePrefix("198.18.0.0/15").Contains(net4.Addr()) || net4.Overlaps(l.subnet) {
		return nil, fmt.Errorf("netlab: pod network %s is not a /24 inside 198.18.0.0/15 outside the LAN's %s", net4, l.subnet)
	}
	if net6.IsValid() && (!l.subnet6.IsValid() || net6.Bits() != 64 || !netip.MustParsePrefix("fd00::/8").Contains(net6.Addr()) || net6.Overlaps(l.subnet6)) {
		return nil, fmt.Errorf("netlab: pod network %s is not a /64 inside fd00::/8 outside the LAN's %s (or the LAN has no IPv6)", net6, l.subnet6)
	}
	net4 = net4.Masked()
	p := &Pod{Name: name, Netns: l.prefix + name, Host: h, IP: nthIn(net4, 2)}
	gw := nthIn(net4, 1)
	veth := "v" + name // the host's end, in the host's namespace
	if len(veth) > 15 {
		return nil, fmt.Errorf("netlab: pod name %s is too long for an interface name", name)
	}
	if err := ip("netns", "add", p.Netns); err != nil {
		return nil, err
	}
	if err := disableIPv6(p.Netns); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"-n", p.Netns, "link", "set", "lo", "up"},
		{"-n", h.Netns, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", p.Netns},
		{"-n", h.Netns, "addr", "add", gw.String() + "/24", "dev", veth},
		{"-n", h.Netns, "link", "set", veth, "up"},
		{"-n", p.Netns, "addr", "add", p.IP.String() + "/24", "dev", "eth0"},
		{"-n", p.Netns, "link", "set", "eth0", "up"},
		{"-n", p.Netns, "route", "add", "default", "via", gw.String()},
	}
	for _, args := range steps {
		if err := ip(args...); err != nil {
			return nil, err
		}
	}
	if err := sysctl(h.Netns, "net.ipv4.ip_forward=1"); err != nil {
		return nil, err
	}
	if net6.IsValid() {
		net6 = net6.Masked()
		p.IP6 = nthIn(net6, 2)
		gw6 := nthIn(net6, 1)
		if err := sysctl(h.Netns, "net.ipv6.conf."+veth+".disable_ipv6=0", "net.ipv6.conf.all.forwarding=1"); err != nil {
			return nil, err
		}
		if err := enableIPv6(p.Netns, p.IP6); err != nil {
			return nil, err
		}
		for _, args := range [][]string{
			{"-n", h.Netns, "addr", "add", gw6.String() + "/64", "dev", veth, "nodad"},
			{"-n", p.Netns, "-6", "route", "add", "default", "via", gw6.String()},
		} {
			if err := ip(args...); err != nil {
				return nil, err
			}
		}
	}
	for _, other := range l.hosts {
		if other == h {
			continue
		}
		if err := ip("-n", other.Netns, "route", "replace", net4.String(), "via", h.IP.String()); err != nil {
			return nil, err
		}
		if net6.IsValid() && other.IP6.IsValid() {
			if err := ip("-n", other.Netns, "-6", "route", "replace", net6.String(), "via", h.IP6.String()); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// nthIn is the n-th address of prefix p.
func nthIn(p netip.Prefix, n int) netip.Addr {
	b := p.Addr().AsSlice()
	b[len(b)-1] += byte(n)
	a, _ := netip.AddrFromSlice(b)
	return a
}

func sysctl(ns string, settings ...string) error {
	args := append([]string{"netns", "exec", ns, "sysctl", "-q", "-w"}, settings...)
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("sysctl %s in %s: %w: %s", strings.Join(settings, " "), ns, err, out)
	}
	return nil
}
