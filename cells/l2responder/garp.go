package l2responder

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
)

// sendGratuitousARP broadcasts an unsolicited ARP reply on the interface
// saying that ip is at mac.
func sendGratuitousARP(ifindex int, ip netip.Addr, mac net.HardwareAddr) error {
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
