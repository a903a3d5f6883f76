// Package neigh sends unsolicited neighbour announcements (gratuitous ARP)
// for the cells that tell the LAN where an address lives: the L2 responder
// when this node takes a LoadBalancer IP over, the L2 pod announcer when a
// pod gets an address. It is no cell: cells never import each other, so
// the code they share lives here.
package neigh

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
)

// SendGratuitousARP broadcasts an unsolicited ARP reply on the interface
// saying that ip is at mac: Ethernet broadcast, sender and target IP both
// ip, target hardware address broadcast (the packet Cilium sends). Linux
// neighbours update an existing cache entry for ip on receiving it.
func SendGratuitousARP(ifindex int, ip netip.Addr, mac net.HardwareAddr) error {
	if !ip.Is4() {
		// ARP carries IPv4 only; IPv6 would need an unsolicited NA.
		return fmt.Errorf("gratuitous ARP for %s: not an IPv4 address", ip)
	}
	ifi, err := net.InterfaceByIndex(ifindex)
	if err != nil {
		return fmt.Errorf("interface %d: %w", ifindex, err)
	}
	c, err := arp.Dial(ifi)
	if err != nil {
		return fmt.Errorf("arp socket on %s: %w", ifi.Name, err)
	}
	defer c.Close()
	p, err := arp.NewPacket(arp.OperationReply, mac, ip, ethernet.Broadcast, ip)
	if err != nil {
		return err
	}
	return c.WriteTo(p, ethernet.Broadcast)
}
