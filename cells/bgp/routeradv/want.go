package routeradv

import (
	"iter"
	"maps"
	"slices"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// interfaces are the interfaces to advertise on: those of the unnumbered
// peers of the instances that run, whether or not the peer is known yet
// (the advertisements are how it learns of the node). An interface maps to
// true while one of its peers is not known: the node then also asks for
// the router's advertisement (a Router Solicitation), rather than wait
// for the router's next one.
func interfaces(insts iter.Seq2[*tables.BGPInstance, statedb.Revision]) map[string]bool {
	out := map[string]bool{}
	for inst := range insts {
		if inst.Error != "" {
			continue
		}
		for _, p := range inst.Peers {
			if p.Unnumbered && p.Interface != "" {
				out[p.Interface] = out[p.Interface] || !p.Address.IsValid()
			}
		}
	}
	return out
}

// onLink splits the interfaces to advertise on into those of the node that
// have an IPv6 link-local address to send from, and the others, sorted. A
// peer config applies to every node it selects, and not every node has
// the peer's interface: such a node waits for the interface to appear
// rather than try to open a socket on it again and again.
func onLink(want map[string]bool, devices iter.Seq2[*tables.Device, statedb.Revision]) (ready map[string]bool, missing []string) {
	ready = map[string]bool{}
	for d := range devices {
		if solicit, ok := want[d.Name]; ok && hasLinkLocal6(d) {
			ready[d.Name] = solicit
		}
	}
	for _, name := range names(want) {
		if _, ok := ready[name]; !ok {
			missing = append(missing, name)
		}
	}
	return ready, missing
}

func hasLinkLocal6(d *tables.Device) bool {
	for _, a := range d.Addresses {
		if a.Addr.Is6() && a.Addr.IsLinkLocalUnicast() {
			return true
		}
	}
	return false
}

// names are the interfaces' names, sorted.
func names(want map[string]bool) []string {
	return slices.Sorted(maps.Keys(want))
}
