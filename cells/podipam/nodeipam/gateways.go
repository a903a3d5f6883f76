package nodeipam

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/tables"
)

// The gateway of each of the node's pod CIDRs lives on the bridge its pods
// are attached to. The bridge plugin could put it there itself
// ("isGateway": true), but only one IPv4 gateway per bridge: a node holds
// several CIDRs (one pool per CIDR at least, and more CIDRs as it fills
// up), so the agent does it, and the network runs with "isGateway": false.
// Each gateway address carries its CIDR's prefix length, which gives the
// node its connected route to the CIDR's pods.

func gatewayAddr(p netip.Prefix) *netlink.Addr {
	gw := tables.PodCIDRGateway(p)
	a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(gw.AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
	if gw.Is6() {
		a.Flags = unix.IFA_F_NODAD // the gateway is ours by construction: no duplicate detection delay
	}
	return a
}

// ensureGateways puts the gateways of these CIDRs on the bridge, and turns
// IP forwarding on the first time.
func (a *agent) ensureGateways(bridge string, cidrs []netip.Prefix) error {
	if bridge == "" || len(cidrs) == 0 {
		return nil
	}
	if !a.forwarding.Load() {
		if err := enableForwarding(a.Config.Procfs, a.families); err != nil {
			return err
		}
		a.forwarding.Store(true)
	}
	link, err := netlink.LinkByName(bridge)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", bridge, err)
	}
	missing, err := missingGateways(link, cidrs)
	if err != nil {
		return fmt.Errorf("addresses of bridge %s: %w", bridge, err)
	}
	for _, c := range missing {
		if err := netlink.AddrReplace(link, gatewayAddr(c)); err != nil {
			if c.Addr().Is6() && errors.Is(err, unix.EACCES) {
				// What the kernel answers when IPv6 is off on the device.
				return fmt.Errorf("gateway of %s on bridge %s: %w (is IPv6 disabled there? sysctl net.ipv6.conf.%s.disable_ipv6, set from net.ipv6.conf.default.disable_ipv6 when the bridge was created)", c, bridge, err, bridge)
			}
			return fmt.Errorf("gateway of %s on bridge %s: %w", c, bridge, err)
		}
	}
	return nil
}

// missingGateways returns the CIDRs whose gateway (address and prefix
// length) is not on the link. Every ADD checks, so a gateway someone
// removed comes back with the next pod; but only a missing one is written:
// a write takes the kernel's RTNL lock, which the runtime's namespace and
// veth changes hold too, and notifies every netlink listener, where a
// read does neither.
func missingGateways(link netlink.Link, cidrs []netip.Prefix) ([]netip.Prefix, error) {
	var v4, v6 []netlink.Addr
	var err error
	var missing []netip.Prefix
	for _, c := range cidrs {
		have := &v4
		fam := netlink.FAMILY_V4
		if c.Addr().Is6() {
			have, fam = &v6, netlink.FAMILY_V6
		}
		if *have == nil {
			if *have, err = netlink.AddrList(link, fam); err != nil {
				return nil, err
			}
		}
		if !hasAddr(*have, gatewayAddr(c)) {
			missing = append(missing, c)
		}
	}
	return missing, nil
}

func hasAddr(addrs []netlink.Addr, want *netlink.Addr) bool {
	for _, a := range addrs {
		if a.IPNet == nil || !a.IP.Equal(want.IP) {
			continue
		}
		ones, bits := a.Mask.Size()
		wantOnes, wantBits := want.Mask.Size()
		if ones == wantOnes && bits == wantBits {
			return true
		}
	}
	return false
}

// removeGateways takes the gateways of CIDRs the node no longer holds off
// whatever device carries them.
func removeGateways(cidrs []netip.Prefix) error {
	if len(cidrs) == 0 {
		return nil
	}
	links, err := netlink.LinkList()
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cidrs {
		want := gatewayAddr(c)
		fam := netlink.FAMILY_V4
		if c.Addr().Is6() {
			fam = netlink.FAMILY_V6
		}
		for _, l := range links {
			addrs, err := netlink.AddrList(l, fam)
			if err != nil {
				continue
			}
			for _, a := range addrs {
				if a.IPNet.String() == want.IPNet.String() {
					if err := netlink.AddrDel(l, &a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
						errs = append(errs, fmt.Errorf("gateway of %s on %s: %w", c, l.Attrs().Name, err))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// enableForwarding turns on IP forwarding: pods reach other nodes, and
// other nodes reach them, through this node. A setting that is on already
// is left alone (and needs no write access).
func enableForwarding(procfs string, families []tables.Family) error {
	for _, f := range families {
		path := filepath.Join(procfs, "sys/net/ipv4/ip_forward")
		if f == tables.IPv6 {
			path = filepath.Join(procfs, "sys/net/ipv6/conf/all/forwarding")
		}
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == "1" {
			continue
		}
		if err := os.WriteFile(path, []byte("1"), 0o644); err != nil {
			return fmt.Errorf("enabling %s forwarding (procfs %s): %w", f, procfs, err)
		}
	}
	return nil
}
