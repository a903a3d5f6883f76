package neigh

import (
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"
)

// NDP is this host's side of IPv6 neighbour discovery for addresses it
// answers for without owning them (the eBPF responder answers the
// solicitations): per interface, membership of the addresses'
// solicited-node multicast groups, and unsolicited advertisements.
//
// Membership matters on real hardware: a NIC delivers multicast frames only
// for the groups the host joined, and switches that snoop MLD forward a
// group's traffic only to the ports that reported it. Without it, the
// solicitations for a VIP (sent to its solicited-node group) would never
// reach the responder. Joining through a socket makes the kernel program
// the NIC filter and send the MLD reports; the memberships end with the
// socket, so a dead agent leaves none behind.
//
// One ICMPv6 socket per interface, bound to the interface's link-local
// address (an interface without one cannot do neighbour discovery). It
// never reads: its filter blocks every ICMPv6 type.
type NDP struct {
	mu    sync.Mutex
	ports map[int]*ndpPort
}

type ndpPort struct {
	conn *ndp.Conn
	// want holds the addresses wanted on the interface, by solicited-node
	// group: a group is joined while it has one.
	want map[netip.Addr]map[netip.Addr]bool
}

// NewNDP returns an NDP without sockets; they open on first use.
func NewNDP() *NDP { return &NDP{ports: map[int]*ndpPort{}} }

// Want makes sure the host receives solicitations for ip on the interface.
// Calling it again for the same address is a no-op.
func (n *NDP) Want(ifindex int, ip netip.Addr) error {
	group, err := ndp.SolicitedNodeMulticast(ip)
	if err != nil {
		return fmt.Errorf("solicited-node group of %s: %w", ip, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p, err := n.port(ifindex)
	if err != nil {
		return err
	}
	if p.want[group][ip] {
		return nil
	}
	if len(p.want[group]) == 0 {
		if err := p.conn.JoinGroup(group); err != nil {
			return fmt.Errorf("joining %s on interface %d: %w", group, ifindex, err)
		}
		p.want[group] = map[netip.Addr]bool{}
	}
	p.want[group][ip] = true
	return nil
}

// Unwant undoes Want; the group is left when no wanted address needs it,
// the socket closed when the interface has none.
func (n *NDP) Unwant(ifindex int, ip netip.Addr) error {
	group, err := ndp.SolicitedNodeMulticast(ip)
	if err != nil {
		return fmt.Errorf("solicited-node group of %s: %w", ip, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.ports[ifindex]
	if p == nil || !p.want[group][ip] {
		return nil
	}
	delete(p.want[group], ip)
	if len(p.want[group]) > 0 {
		return nil
	}
	delete(p.want, group)
	err = p.conn.LeaveGroup(group)
	if len(p.want) == 0 {
		_ = p.conn.Close()
		delete(n.ports, ifindex)
	}
	if err != nil {
		return fmt.Errorf("leaving %s on interface %d: %w", group, ifindex, err)
	}
	return nil
}

// Advertise sends an unsolicited Neighbor Advertisement (RFC 4861 7.2.6) to
// all nodes on the interface: ip is at mac, override flag set, so that
// neighbours update an existing cache entry at once. The IPv6 counterpart
// of SendGratuitousARP.
func (n *NDP) Advertise(ifindex int, ip netip.Addr, mac net.HardwareAddr) error {
	if !ip.Is6() || ip.Is4In6() {
		return fmt.Errorf("neighbor advertisement for %s: not an IPv6 address", ip)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.ports[ifindex]
	transient := p == nil
	if transient {
		var err error
		if p, err = n.open(ifindex); err != nil {
			return err
		}
		defer func() { _ = p.conn.Close() }()
	}
	na := &ndp.NeighborAdvertisement{
		Override:      true,
		TargetAddress: ip,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: mac}},
	}
	if err := p.conn.WriteTo(na, nil, netip.IPv6LinkLocalAllNodes()); err != nil {
		return fmt.Errorf("neighbor advertisement for %s on interface %d: %w", ip, ifindex, err)
	}
	return nil
}

// Close leaves every group.
func (n *NDP) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ifindex, p := range n.ports {
		_ = p.conn.Close()
		delete(n.ports, ifindex)
	}
	return nil
}

// port returns the interface's socket, opening it if needed.
func (n *NDP) port(ifindex int) (*ndpPort, error) {
	if p := n.ports[ifindex]; p != nil {
		return p, nil
	}
	p, err := n.open(ifindex)
	if err != nil {
		return nil, err
	}
	n.ports[ifindex] = p
	return p, nil
}

func (n *NDP) open(ifindex int) (*ndpPort, error) {
	ifi, err := net.InterfaceByIndex(ifindex)
	if err != nil {
		return nil, fmt.Errorf("interface %d: %w", ifindex, err)
	}
	conn, _, err := ndp.Listen(ifi, ndp.LinkLocal)
	if err != nil {
		return nil, fmt.Errorf("neighbour discovery socket on %s (it needs an IPv6 link-local address): %w", ifi.Name, err)
	}
	var block ipv6.ICMPFilter
	block.SetAll(true)
	if err := conn.SetICMPFilter(&block); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("neighbour discovery socket on %s: %w", ifi.Name, err)
	}
	return &ndpPort{conn: conn, want: map[netip.Addr]map[netip.Addr]bool{}}, nil
}
