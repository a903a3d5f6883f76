package ipamcheck

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"

	"github.com/heraldlb/herald/tables"
)

// Findings about the pod CIDRs: on two nodes, missing from the CiliumNode
// or the agent, outside their pool, unparsable.

// overlaps returns every pair of holdings on different nodes that share an
// address. Prefixes either nest or are disjoint: sorted by address, then
// length, every prefix still on the stack when p comes contains p.
func overlaps(hs []holding) [][2]holding {
	hs = slices.Clone(hs)
	sort.Slice(hs, func(i, j int) bool {
		a, b := hs[i], hs[j]
		if c := a.prefix.Addr().Compare(b.prefix.Addr()); c != 0 {
			return c < 0
		}
		if a.prefix.Bits() != b.prefix.Bits() {
			return a.prefix.Bits() < b.prefix.Bits()
		}
		if a.node != b.node {
			return a.node < b.node
		}
		return a.pool < b.pool
	})
	var out [][2]holding
	var stack []holding
	for _, h := range hs {
		for len(stack) > 0 && !stack[len(stack)-1].prefix.Contains(h.prefix.Addr()) {
			stack = stack[:len(stack)-1]
		}
		for _, o := range stack {
			if o.node != h.node {
				out = append(out, [2]holding{o, h})
			}
		}
		stack = append(stack, h)
	}
	return out
}

func (c *checker) cidrsOnTwoNodes() {
	var all []holding
	for _, n := range c.in.CiliumNodes {
		all = append(all, n.holdings()...)
	}
	for _, pair := range overlaps(all) {
		a, b := pair[0], pair[1]
		cidrs := []string{a.prefix.String()}
		what := fmt.Sprintf("%s is listed in CiliumNode %s (pool %q) and in CiliumNode %s (pool %q)", a.prefix, a.node, a.pool, b.node, b.pool)
		if a.prefix != b.prefix {
			cidrs = append(cidrs, b.prefix.String())
			what = fmt.Sprintf("%s in CiliumNode %s (pool %q) overlaps %s in CiliumNode %s (pool %q)", a.prefix, a.node, a.pool, b.prefix, b.node, b.pool)
		}
		ua, ub := c.inUse(a.node, a.prefix), c.inUse(b.node, b.prefix)
		f := Finding{
			Kind: KindCIDROnTwoNodes, Severity: Error, CIDRs: cidrs, Nodes: []string{a.node, b.node},
			Problem: fmt.Sprintf("%s: both nodes may hand out the same addresses. %s; %s.", what, usesText(a.node, ua), usesText(b.node, ub)),
		}
		if a.pool == b.pool {
			f.Pool = a.pool
		}
		switch {
		case len(ua) == 0 && len(ub) > 0:
			f.Action = fmt.Sprintf("release removes %s from CiliumNode %s's spec.ipam.pools.allocated (conditional on its resourceVersion; refused while node %s uses an address of it).", a.prefix, a.node, a.node)
			f.Command = CIDRReleaseCommand(a.prefix.String(), a.node)
		case len(ub) == 0 && len(ua) > 0:
			f.Action = fmt.Sprintf("release removes %s from CiliumNode %s's spec.ipam.pools.allocated (conditional on its resourceVersion; refused while node %s uses an address of it).", b.prefix, b.node, b.node)
			f.Command = CIDRReleaseCommand(b.prefix.String(), b.node)
		case len(ua) == 0 && len(ub) == 0:
			f.Action = fmt.Sprintf("Neither node uses it: release removes it from the CiliumNode you name, either `%s` or `%s`.",
				CIDRReleaseCommand(a.prefix.String(), a.node), CIDRReleaseCommand(b.prefix.String(), b.node))
		default:
			f.Action = "Both nodes use addresses of it, and pods on the two may share addresses (see duplicate-address). release refuses " +
				"while a node uses the CIDR: delete that node's pods in it first, then remove it from that node's CiliumNode with release --cidr."
		}
		c.add(f)
	}
}

func (c *checker) cidrsNotInCiliumNode() {
	if c.self == nil {
		return
	}
	for _, r := range sortedCIDRRows(c.in.CIDRs) {
		if c.self.lists(r.CIDR) || r.Releasing {
			// Releasing: the agent gave it back and has not yet seen its
			// CiliumNode without it.
			continue
		}
		f := Finding{Kind: KindCIDRNotInCiliumNode, CIDRs: []string{r.CIDR.String()}, Pool: r.Pool, Nodes: []string{c.in.Node}}
		if r.InUse == 0 {
			f.Severity = Note
			f.Problem = fmt.Sprintf("The agent on %s has %s (pool %q), which its CiliumNode no longer lists, and nothing uses it.", c.in.Node, r.CIDR, r.Pool)
			f.Action = "Nothing to release: the agent drops it as soon as it sees its CiliumNode. If this stays, the agent does not follow its CiliumNode: see its health."
		} else {
			f.Severity = Error
			f.Problem = fmt.Sprintf("CiliumNode %s no longer lists %s (pool %q), but the node uses %s of it (the agent hands out nothing new from it). "+
				"The allocator may give it to another node, and then two pods have one address.", c.in.Node, r.CIDR, r.Pool, addresses(r.InUse))
			f.Action = fmt.Sprintf("release does not apply. If no other node holds it (no cidr-on-two-nodes finding), put it back: add %s under pool %q "+
				"to CiliumNode %s's spec.ipam.pools.allocated. Otherwise delete the pods using it; the agent forgets it when its last address is released.",
				r.CIDR, r.Pool, c.in.Node)
		}
		c.add(f)
	}
}

func sortedCIDRRows(rs []*tables.NodePodCIDR) []*tables.NodePodCIDR {
	out := slices.Clone(rs)
	sort.Slice(out, func(i, j int) bool { return out[i].CIDR.Addr().Less(out[j].CIDR.Addr()) })
	return out
}

// inPool reports whether p lies inside the pool's CIDRs of its family.
func inPool(pool *tables.PodIPPool, p netip.Prefix) bool {
	fam := pool.Family(tables.FamilyOf(p.Addr()))
	if fam == nil {
		return false
	}
	for _, parent := range fam.CIDRs {
		if parent.Bits() <= p.Bits() && parent.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

func (c *checker) cidrsOutsidePool() {
	if c.self == nil {
		return
	}
	for _, h := range c.self.holdings() {
		pool := c.pools[h.pool]
		if pool != nil && inPool(pool, h.prefix) {
			continue
		}
		if r := c.agentCIDRs[h.prefix]; r != nil && r.Releasing {
			continue // on its way back already
		}
		where := fmt.Sprintf("outside the CIDRs of pool %q", h.pool)
		if pool == nil {
			where = fmt.Sprintf("listed under pool %q, which does not exist", h.pool)
		}
		used := c.inUse(c.in.Node, h.prefix)
		f := Finding{Kind: KindCIDROutsidePool, CIDRs: []string{h.prefix.String()}, Pool: h.pool, Nodes: []string{c.in.Node}}
		if len(used) > 0 {
			f.Severity = Note
			f.Problem = fmt.Sprintf("%s of node %s is %s (the pool shrank or went); %s.", h.prefix, c.in.Node, where, usesText(c.in.Node, used))
			f.Action = "Nothing to release: the node keeps it while its pods use it, hands out nothing more from it and gives it back once they are gone; no other node gets it meanwhile."
		} else {
			f.Severity = Error
			f.Problem = fmt.Sprintf("%s of node %s is %s (the pool shrank or went), and nothing uses it: a running agent gives such a CIDR back at once, "+
				"so the node's agent is down or behind.", h.prefix, c.in.Node, where)
			f.Action = fmt.Sprintf("release removes %s from CiliumNode %s's spec.ipam.pools.allocated; the allocator then gives the node a CIDR of the pool if it needs one.", h.prefix, c.in.Node)
			f.Command = CIDRReleaseCommand(h.prefix.String(), c.in.Node)
		}
		c.add(f)
	}
}

func (c *checker) badCIDRs() {
	for _, n := range c.in.CiliumNodes {
		for _, b := range n.BadCIDRs {
			c.add(Finding{
				Kind: KindBadCIDR, Severity: Error, CIDRs: []string{b.Value}, Pool: b.Pool, Nodes: []string{n.Name},
				Problem: fmt.Sprintf("CiliumNode %s lists %q under pool %q in spec.ipam.pools.allocated, which is not a CIDR (%s): no one uses it, and it hides what was meant.", n.Name, b.Value, b.Pool, b.Err),
				Action:  fmt.Sprintf("release removes the entry from CiliumNode %s's spec.ipam.pools.allocated.", n.Name),
				Command: CIDRReleaseCommand(b.Value, n.Name),
			})
		}
	}
}

func (c *checker) cidrsNotOnAgent() {
	if c.self == nil {
		return
	}
	for _, h := range c.self.holdings() {
		if _, ok := c.agentCIDRs[h.prefix]; ok {
			continue
		}
		c.add(Finding{
			Kind: KindCIDRNotOnAgent, Severity: Note, CIDRs: []string{h.prefix.String()}, Pool: h.pool, Nodes: []string{c.in.Node},
			Problem: fmt.Sprintf("CiliumNode %s lists %s (pool %q), which the agent does not have yet.", c.in.Node, h.prefix, h.pool),
			Action:  "Nothing to release: the agent takes it as soon as it sees its CiliumNode. If this stays, the agent does not follow its CiliumNode: see its health.",
		})
	}
}
