package desired

import (
	"fmt"
	"net/netip"

	"github.com/heraldlb/herald/tables"
)

// routerID is an instance's router ID when its node's override sets none:
// the node's IPv4 InternalIP, else (an IPv6-only node) the last four bytes
// of the MAC address of the device holding the node's IPv6 InternalIP.
// That is Cilium's "default" router-id allocation mode, where the device
// is cilium_host; Herald has none, so it takes the node's own interface.
// Two nodes whose MACs end alike would share a router ID: set routerID in
// their overrides then. errMsg says why there is none.
func routerID(self *tables.Node, devices []*tables.Device) (id netip.Addr, errMsg string) {
	if ip, ok := self.InternalIP(tables.IPv4); ok {
		return ip, ""
	}
	ip6, ok := self.InternalIP(tables.IPv6)
	if !ok {
		return netip.Addr{}, "no router ID: the node has no InternalIP; set routerID in a CiliumBGPNodeConfigOverride named after the node"
	}
	for _, d := range devices {
		for _, a := range d.Addresses {
			if a.Addr != ip6 {
				continue
			}
			if mac := d.HWAddr; len(mac) >= 4 {
				id := netip.AddrFrom4([4]byte(mac[len(mac)-4:]))
				if !id.IsUnspecified() {
					return id, ""
				}
			}
			return netip.Addr{}, fmt.Sprintf("no router ID: the node has no IPv4 InternalIP and device %s (holding its InternalIP %s) has no MAC address to derive one from; "+
				"set routerID in a CiliumBGPNodeConfigOverride named after the node", d.Name, ip6)
		}
	}
	return netip.Addr{}, fmt.Sprintf("no router ID: the node has no IPv4 InternalIP and no device holds its InternalIP %s to derive one from; "+
		"set routerID in a CiliumBGPNodeConfigOverride named after the node", ip6)
}
