package bgproutes

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
	"github.com/heraldlb/herald/tables"
)

// InstanceName names the control-plane VIP's BGP instance.
const InstanceName = "control-plane-vip"

// instance is the BGP instance the settings describe: one peer per
// router, in the families of the VIPs; the speaker only connects
// (ListenPort -1), as Cilium's do by default.
func instance(b *cpvipconfig.BGP, vips []netip.Addr) *tables.BGPInstance {
	var families []string
	for _, f := range []struct {
		name string
		is   func(netip.Addr) bool
	}{{"ipv4-unicast", netip.Addr.Is4}, {"ipv6-unicast", netip.Addr.Is6}} {
		for _, v := range vips {
			if f.is(v) {
				families = append(families, f.name)
				break
			}
		}
	}
	hold := int32(b.HoldTime / time.Second)
	inst := &tables.BGPInstance{Name: InstanceName, LocalASN: b.LocalASN, RouterID: b.RouterID, ListenPort: -1}
	for _, p := range b.Peers {
		inst.Peers = append(inst.Peers, tables.BGPPeer{
			Name: peerName(p), Address: p.Addr, ASN: p.ASN,
			PeerPort: 179, ConnectRetrySeconds: 5, HoldTimeSeconds: hold, KeepAliveSeconds: max(hold/3, 1),
			Families: families, BFD: b.BFD,
		})
	}
	return inst
}

func peerName(p cpvipconfig.BGPPeer) string { return fmt.Sprintf("router-%s", p.Addr) }

// routes are what the owner advertises: every VIP this node answers for
// (its l2-announce entries not being withdrawn), to every router.
func routes(b *cpvipconfig.BGP, entries []*tables.L2AnnounceEntry) []*tables.BGPRoute {
	var out []*tables.BGPRoute
	for _, e := range entries {
		if e.Withdrawn {
			continue
		}
		for _, p := range b.Peers {
			out = append(out, &tables.BGPRoute{Instance: InstanceName, Peer: peerName(p), PeerAddress: p.Addr,
				Prefix:  netip.PrefixFrom(e.IP, e.IP.BitLen()),
				Reasons: []string{"control-plane VIP: this node owns it"}})
		}
	}
	return out
}
