package ipamcheck

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/heraldlb/herald/tables"
)

// Findings about addresses: leaked, held twice, outside the node's CIDRs.

// inNodeCIDRs reports whether ip lies in a CIDR this node's CiliumNode
// lists or its agent has.
func (c *checker) inNodeCIDRs(ip netip.Addr) bool {
	if c.self != nil {
		for _, h := range c.self.holdings() {
			if h.prefix.Contains(ip) {
				return true
			}
		}
	}
	for p := range c.agentCIDRs {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func (c *checker) leaks() {
	for _, as := range c.attachments() {
		gone, why := c.podGone(as[0])
		if !gone {
			continue
		}
		a := as[0]
		ips := ipsOf(as)
		var outside []string
		for _, x := range as {
			if c.self != nil && !c.inNodeCIDRs(x.IP) {
				outside = append(outside, x.IP.String())
			}
		}
		gc := fmt.Sprintf("The agent's own garbage collection does the same %s after the Pod went, once the API server confirms it is gone.", gcAfter)
		problem := fmt.Sprintf("%s, but node %s still holds %s for its container %s, interface %s (since %s).",
			why, c.in.Node, andList(ips), a.ContainerID, a.IfName, a.Since.UTC().Format(time.RFC3339))
		if len(outside) > 0 {
			problem += fmt.Sprintf(" %s also lies outside every CIDR the node holds.", andList(outside))
		}
		c.add(Finding{
			Kind: KindLeaked, Severity: Error, IPs: ips, Pod: a.PodNS + "/" + a.PodName, PodUID: a.PodUID,
			Attachment: attachmentOf(a), Nodes: []string{c.in.Node}, Pool: a.Pool,
			Problem: problem,
			Action: fmt.Sprintf("release sends the agent the CNI DEL of container %s, interface %s, which releases %s "+
				"through the agent's journal, as the container runtime's DEL would have. %s", a.ContainerID, a.IfName, andList(ips), gc),
			Command: ReleaseCommand(ips[0]),
		})
	}
}

// holder is one claim on an address: an allocation of this node or an
// entry of another node's status.ipam.used.
type holder struct {
	node  string
	local *tables.PodIPAllocation
	use   Use
}

func (h holder) String() string {
	if h.local != nil {
		return fmt.Sprintf("pod %s/%s on node %s (container %s, interface %s)", h.local.PodNS, h.local.PodName, h.node, h.local.ContainerID, h.local.IfName)
	}
	owner := h.use.Owner
	if owner == "" {
		owner = "an unnamed owner"
	} else {
		owner = "pod " + owner
	}
	return fmt.Sprintf("%s on node %s (its CiliumNode's status.ipam.used)", owner, h.node)
}

func (c *checker) duplicateAddresses() {
	holders := map[netip.Addr][]holder{}
	for _, a := range c.in.Allocations {
		holders[a.IP] = append(holders[a.IP], holder{node: c.in.Node, local: a})
	}
	// This node's own status.ipam.used is the agent's allocations again,
	// as of a moment ago: the rows above stand for it.
	for _, n := range c.in.CiliumNodes {
		if n.Name == c.in.Node {
			continue
		}
		for ip, u := range n.Used {
			holders[ip] = append(holders[ip], holder{node: n.Name, use: u})
		}
	}
	ips := make([]netip.Addr, 0, len(holders))
	for ip, hs := range holders {
		if len(hs) > 1 {
			ips = append(ips, ip)
		}
	}
	sort.Slice(ips, func(i, j int) bool { return ips[i].Less(ips[j]) })
	for _, ip := range ips {
		hs := holders[ip]
		sort.SliceStable(hs, func(i, j int) bool { return hs[i].node < hs[j].node })
		var names, nodes []string
		var leakedHere *tables.PodIPAllocation
		for _, h := range hs {
			names = append(names, h.String())
			if !slices.Contains(nodes, h.node) {
				nodes = append(nodes, h.node)
			}
			if h.local != nil {
				if gone, _ := c.podGone(h.local); gone {
					leakedHere = h.local
				}
			}
		}
		f := Finding{
			Kind: KindDuplicateAddress, Severity: Error, IPs: []string{ip.String()}, Nodes: nodes,
			Problem: fmt.Sprintf("%s is held twice: by %s. Two pods with one address: traffic for one reaches the other.", ip, andList(names)),
		}
		switch {
		case leakedHere != nil:
			f.Pod, f.PodUID, f.Attachment = leakedHere.PodNS+"/"+leakedHere.PodName, leakedHere.PodUID, attachmentOf(leakedHere)
			f.Action = fmt.Sprintf("The holder on this node, pod %s, is gone: release sends the CNI DEL of its container %s, which frees the address here.", f.Pod, f.Attachment)
			f.Command = ReleaseCommand(ip.String())
		default:
			f.Action = "release does not apply while both pods exist: delete one of them (its DEL releases the address), then find out how the address " +
				"came to be held twice: an address on two nodes means a CIDR on two nodes (see cidr-on-two-nodes)."
		}
		c.add(f)
	}
}

func (c *checker) outsideNodeCIDRs() {
	if c.self == nil {
		return
	}
	for _, as := range c.attachments() {
		if gone, _ := c.podGone(as[0]); gone {
			continue // a leak: releasing it settles both
		}
		for _, a := range as {
			if c.inNodeCIDRs(a.IP) {
				continue
			}
			key := a.PodNS + "/" + a.PodName
			c.add(Finding{
				Kind: KindOutsideNodeCIDRs, Severity: Error, IPs: []string{a.IP.String()}, CIDRs: []string{a.CIDR.String()},
				Pool: a.Pool, Pod: key, PodUID: a.PodUID, Attachment: attachmentOf(a), Nodes: []string{c.in.Node},
				Problem: fmt.Sprintf("%s of pod %s lies outside every CIDR node %s holds: the agent journaled it from %s (pool %q), "+
					"which the node's CiliumNode no longer lists. The allocator may give that range to another node.", a.IP, key, c.in.Node, a.CIDR, a.Pool),
				Action: fmt.Sprintf("release refuses while pod %s exists: delete the pod (its DEL releases the address) so that it starts again with an "+
					"address of the node's CIDRs. `%s --force` frees the address while the pod keeps using it.", key, ReleaseCommand(a.IP.String())),
			})
		}
	}
}

// inUse returns the addresses a node uses inside p: for this node its
// agent's allocations, for others their status.ipam.used.
func (c *checker) inUse(node string, p netip.Prefix) []netip.Addr {
	if node == c.in.Node {
		var out []netip.Addr
		for _, a := range c.in.Allocations {
			if p.Contains(a.IP) {
				out = append(out, a.IP)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
		return out
	}
	if n := c.nodes[node]; n != nil {
		return n.usedIn(p)
	}
	return nil
}

func usesText(node string, ips []netip.Addr) string {
	switch len(ips) {
	case 0:
		return fmt.Sprintf("node %s uses no address of it", node)
	case 1:
		return fmt.Sprintf("node %s uses 1 address of it (%s)", node, ips[0])
	}
	shown := ips
	more := ""
	if len(shown) > 3 {
		shown, more = shown[:3], ", ..."
	}
	s := make([]string, len(shown))
	for i, a := range shown {
		s[i] = a.String()
	}
	return fmt.Sprintf("node %s uses %s of it (%s%s)", node, addresses(len(ips)), strings.Join(s, ", "), more)
}
