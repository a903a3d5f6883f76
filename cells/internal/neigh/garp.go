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

// SendGratuitousARP tells the LAN that ip is at mac with two broadcast
// frames: an ARP Announcement (RFC 5227: a request with sender and target
// IP both ip, target hardware address zero) and the unsolicited reply
// Cilium sends (target hardware address broadcast). Linux takes the
// request as gratuitous and updates an existing cache entry at once; the
// reply alone it ignores within the entry's locktime (1 s) of its last
// change, which a previous owner's last answer may just have made, and the
// neighbour would then keep sending to the old MAC for as long as traffic
// through it confirms the entry. Other stacks take one form or the other.
func SendGratuitousARP(ifindex int, ip netip.Addr, mac net.HardwareAddr) error {
	return SendGratuitousARPs(ifindex, mac, ip)
}

// SendGratuitousARPs sends SendGratuitousARP's two frames for each of ips,
// all through one socket: opening and closing a packet socket costs about
// 12 ms (the kernel waits for an RCU grace period when it closes one), which
// a takeover of hundreds of addresses would otherwise pay for each of them.
func SendGratuitousARPs(ifindex int, mac net.HardwareAddr, ips ...netip.Addr) error {
	for _, ip := range ips {
		if !ip.Is4() {
			// ARP carries IPv4 only; IPv6 would need an unsolicited NA.
			return fmt.Errorf("gratuitous ARP for %s: not an IPv4 address", ip)
		}
	}
	if len(ips) == 0 {
		return nil
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
	for _, ip := range ips {
		announcement, err := arp.NewPacket(arp.OperationRequest, mac, ip, net.HardwareAddr{0, 0, 0, 0, 0, 0}, ip)
		if err != nil {
			return err
		}
		reply, err := arp.NewPacket(arp.OperationReply, mac, ip, ethernet.Broadcast, ip)
		if err != nil {
			return err
		}
		for _, p := range []*arp.Packet{announcement, reply} {
			if err := c.WriteTo(p, ethernet.Broadcast); err != nil {
				return fmt.Errorf("gratuitous ARP for %s on %s: %w", ip, ifi.Name, err)
			}
		}
	}
	return nil
}
