package netlab

import (
	"fmt"
	"net"
	"net/netip"
)

// subnetFree fails when a device of the root namespace already has an
// address in subnet: another LAN (another suite, running at the same time)
// took it. Two LANs on one subnet would each put .1 in the root namespace,
// and the root namespace's packets for the subnet would go to whichever
// route the kernel picks: a test would talk to the other suite's hosts.
// Each suite's LAN needs a subnet of its own; this says so at once.
func subnetFree(subnet netip.Prefix) error {
	ifaces, err := net.Interfaces()
	if err != nil {
		return err
	}
	var taken []deviceAddr
	for _, ifc := range ifaces {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue // gone since the listing
		}
		for _, a := range addrs {
			// An *net.IPNet prints as address/length.
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				taken = append(taken, deviceAddr{ifc.Name, p})
			}
		}
	}
	if d, ok := overlapping(subnet, taken); ok {
		return fmt.Errorf("netlab: subnet %s is already up on %s (%s): another LAN uses it; give each suite a subnet of its own", subnet, d.dev, d.addr)
	}
	return nil
}

// deviceAddr is an address of a root-namespace device, with its prefix
// length.
type deviceAddr struct {
	dev  string
	addr netip.Prefix
}

// overlapping returns the first address whose network overlaps subnet.
func overlapping(subnet netip.Prefix, taken []deviceAddr) (deviceAddr, bool) {
	for _, d := range taken {
		if d.addr.Masked().Overlaps(subnet) {
			return d, true
		}
	}
	return deviceAddr{}, false
}
