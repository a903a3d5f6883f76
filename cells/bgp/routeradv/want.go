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

// names are the interfaces' names, sorted.
func names(want map[string]bool) []string {
	return slices.Sorted(maps.Keys(want))
}
