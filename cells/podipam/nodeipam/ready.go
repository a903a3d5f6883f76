package nodeipam

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
)

// When the node's network is ready (CNI STATUS), as in Cilium's agent,
// whose IPAM waits at start for a CIDR of every pool listed in
// ipam-multi-pool-pre-allocation (waitForAllPools), and for nothing else:
//
//   - the agent has read its CiliumNode (before, it knows neither its
//     CIDRs nor its pools);
//   - every pool pre-allocated with a count above 0 has a CIDR that hands
//     out, in each family the node runs and the pool has (an IPv4-only
//     pool pre-allocates IPv4 only, see needsOf). The pool default is
//     waited for only when it is listed: a node that pre-allocates only
//     blue asks nothing of default, and waiting for it would be waiting
//     forever, with no pod scheduled on the node to make it ask.
//
// Cilium waits once, when its agent starts, and so does Herald: once
// ready, the node stays ready while the agent runs. A pool that later runs
// short, drains or is deleted makes the ADDs for it wait or fail with its
// own error; turning the node NotReady would stop every pod from being
// scheduled on it, those of the other pools too.

// ready reports whether the node is ready, or else what it waits for.
func (s *state) ready() (bool, string) {
	if s.becameReady {
		return true, ""
	}
	if why := s.waitingFor(); why != "" {
		return false, why
	}
	s.becameReady = true
	return true, ""
}

// waitingFor names the first thing the node waits for ("" for nothing).
func (s *state) waitingFor() string {
	if !s.synced {
		return "the agent has not read this node's CiliumNode yet, so it knows none of the node's pod CIDRs"
	}
	for _, name := range s.preAllocated() {
		flag := fmt.Sprintf("ipam-multi-pool-pre-allocation %s=%d", name, s.pre[name])
		p := s.pools[name]
		switch {
		case p == nil:
			return fmt.Sprintf("waiting for the CiliumPodIPPool %q (%s), which does not exist", name, flag)
		case p.Deleting:
			// It hands out nothing any more and the node asks nothing of
			// it: there is nothing to wait for.
			continue
		}
		for _, f := range s.families {
			pf := poolFamily{name, f}
			if p.Family(f) == nil || s.hasServingCIDR(pf) {
				continue
			}
			why := fmt.Sprintf("waiting for an %s CIDR of the pool %q (%s)", f, name, flag)
			if sf, ok := s.shortfalls[pf]; ok {
				why += ": " + sf.String()
			}
			return why
		}
	}
	return ""
}

// preAllocated lists the pools with a pre-allocation above 0, by name.
func (s *state) preAllocated() []string {
	var out []string
	for name, n := range s.pre {
		if n > 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// hasServingCIDR reports whether the node holds a CIDR of the pool and
// family that new addresses may come from.
func (s *state) hasServingCIDR(pf poolFamily) bool {
	return slices.ContainsFunc(s.order[pf], func(p netip.Prefix) bool {
		c := s.cidrs[p]
		return c != nil && c.servesNew()
	})
}
