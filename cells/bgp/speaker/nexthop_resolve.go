package speaker

import (
	"fmt"

	"github.com/cilium/statedb"
	"github.com/vishvananda/netlink"

	"github.com/heraldlb/herald/tables"
)

// resolveNextHops finds the IPv6 next hop of every peer that needs one
// (needsIPv6NextHop), by name. The interface toward a peer is the one
// holding its configured local address, else the one the kernel routes
// the peer's address through.
func resolveNextHops(txn statedb.ReadTxn, devices statedb.Table[*tables.Device], peers []tables.BGPPeer) map[string]nextHop6 {
	out := map[string]nextHop6{}
	for _, p := range peers {
		if p.Error != "" || !needsIPv6NextHop(p) {
			continue
		}
		dev, err := deviceToward(txn, devices, p)
		out[p.Name] = chooseIPv6NextHop(p, dev, err)
	}
	return out
}

func deviceToward(txn statedb.ReadTxn, devices statedb.Table[*tables.Device], p tables.BGPPeer) (*tables.Device, error) {
	if p.LocalAddress.IsValid() {
		if d := deviceWithAddr(statedb.Collect(devices.All(txn)), p.LocalAddress); d != nil {
			return d, nil
		}
		return nil, fmt.Errorf("no interface has the local address %s", p.LocalAddress)
	}
	routes, err := netlink.RouteGet(p.Address.AsSlice())
	if err != nil || len(routes) == 0 {
		return nil, fmt.Errorf("no route to it (%v)", err)
	}
	d, _, ok := devices.Get(txn, tables.DeviceIndexIndex.Query(routes[0].LinkIndex))
	if !ok {
		return nil, fmt.Errorf("its route's interface (index %d) is not in the devices table", routes[0].LinkIndex)
	}
	return d, nil
}

// applyNextHops resolves the IPv6 next hops of every running speaker's
// peers; where they changed (an address came or went), the instance's
// IPv6 prefixes are marked dirty so that their export policies follow.
func applyNextHops(p params, txn statedb.ReadTxn, speakers map[string]*speaker, want map[string]*tables.BGPInstance, dirty map[prefixKey]bool) {
	for name, s := range speakers {
		hops := resolveNextHops(txn, p.Devices, want[name].Peers)
		changed := nextHopChanges(s.nextHops, hops)
		if len(changed) == 0 {
			continue
		}
		for _, peer := range changed {
			switch h, ok := hops[peer]; {
			case !ok:
			case h.problem != "":
				p.Log.Warn("Not advertising IPv6 routes to BGP peer", "instance", name, "peer", peer, "reason", h.problem)
			default:
				p.Log.Info("IPv6 routes to BGP peer over IPv4 carry this next hop", "instance", name, "peer", peer, "nextHop", h.addr)
			}
		}
		s.nextHops = hops
		for r := range p.Routes.All(txn) {
			if r.Instance == name && r.Prefix.Addr().Is6() {
				dirty[prefixKey{name, r.Prefix}] = true
			}
		}
	}
}
