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

// Severity says whether a finding makes `check` fail.
type Severity string

const (
	// Error: something is wrong now and stays wrong without someone (or,
	// for leaks, the agent's garbage collection) acting; check exits
	// non-zero.
	Error Severity = "error"
	// Note: expected for a while (a pool shrank under pods that still
	// run, an agent catching up with its CiliumNode); check still exits 0.
	Note Severity = "note"
)

// Kind is what a finding is about.
type Kind string

// The kinds, in the order check lists them.
const (
	// KindNoCiliumNode: this node has no CiliumNode.
	KindNoCiliumNode Kind = "no-ciliumnode"
	// KindLeaked: the node holds addresses for a Pod that is gone.
	KindLeaked Kind = "leaked-address"
	// KindDuplicateAddress: one address held by two attachments, on this
	// node or on two nodes.
	KindDuplicateAddress Kind = "duplicate-address"
	// KindOutsideNodeCIDRs: an address of a live Pod lies outside every
	// CIDR the node holds.
	KindOutsideNodeCIDRs Kind = "address-outside-node-cidrs"
	// KindCIDROnTwoNodes: one CIDR, or overlapping ones, in two
	// CiliumNodes.
	KindCIDROnTwoNodes Kind = "cidr-on-two-nodes"
	// KindCIDRNotInCiliumNode: the agent has a CIDR its CiliumNode no
	// longer lists.
	KindCIDRNotInCiliumNode Kind = "cidr-not-in-ciliumnode"
	// KindCIDROutsidePool: a CIDR of this node lies outside its pool (the
	// pool shrank or was deleted).
	KindCIDROutsidePool Kind = "cidr-outside-pool"
	// KindBadCIDR: a CiliumNode lists something that is not a CIDR.
	KindBadCIDR Kind = "bad-cidr"
	// KindCIDRNotOnAgent: the CiliumNode lists a CIDR the agent does not
	// have yet.
	KindCIDRNotOnAgent Kind = "cidr-not-on-agent"
)

var kindOrder = []Kind{
	KindNoCiliumNode, KindLeaked, KindDuplicateAddress, KindOutsideNodeCIDRs, KindCIDROnTwoNodes,
	KindCIDRNotInCiliumNode, KindCIDROutsidePool, KindBadCIDR, KindCIDRNotOnAgent,
}

// Finding is one problem.
type Finding struct {
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	// The objects concerned; only those that apply are set.
	IPs        []string `json:"ips,omitempty"`
	CIDRs      []string `json:"cidrs,omitempty"`
	Pool       string   `json:"pool,omitempty"`
	Pod        string   `json:"pod,omitempty"` // namespace/name
	PodUID     string   `json:"podUID,omitempty"`
	Attachment string   `json:"attachment,omitempty"` // containerID/ifName
	Nodes      []string `json:"nodes,omitempty"`
	// Problem says what is wrong.
	Problem string `json:"problem"`
	// Action says what `herald-dbg ipam release` would do about it, or
	// what to do instead when release does not apply.
	Action string `json:"action"`
	// Command is the release command that resolves it, when there is one
	// that is safe to run without --force.
	Command string `json:"command,omitempty"`
}

// Objects names what the finding is about, in one line.
func (f Finding) Objects() string {
	var parts []string
	if len(f.IPs) > 0 {
		parts = append(parts, strings.Join(f.IPs, ", "))
	}
	if len(f.CIDRs) > 0 {
		parts = append(parts, strings.Join(f.CIDRs, ", "))
	}
	if f.Pod != "" {
		parts = append(parts, "pod "+f.Pod)
	}
	if f.Pool != "" {
		parts = append(parts, "pool "+f.Pool)
	}
	switch len(f.Nodes) {
	case 0:
	case 1:
		parts = append(parts, "node "+f.Nodes[0])
	default:
		parts = append(parts, "nodes "+strings.Join(f.Nodes, ", "))
	}
	return strings.Join(parts, "  ")
}

// Report is the outcome of a check.
type Report struct {
	Node     string    `json:"node"`
	Findings []Finding `json:"findings"`
	Errors   int       `json:"errors"`
	Notes    int       `json:"notes"`
	// What was looked at.
	Addresses   int `json:"addresses"`
	NodeCIDRs   int `json:"nodeCIDRs"`
	CiliumNodes int `json:"ciliumNodes"`
	Pools       int `json:"pools"`
	Pods        int `json:"pods"`
}

// gcAfter is how long after its Pod went the agent's garbage collection
// releases an address by itself, at the earliest (nodeipam: an address is
// looked at once it is a minute old, and released when its Pod has been
// missing for another minute and the API server confirms).
const gcAfter = "a minute or two"

// Check finds the problems in what the node's agent and the API server
// say.
func Check(in Input) Report {
	c := newChecker(in)
	c.missingCiliumNode()
	c.leaks()
	c.duplicateAddresses()
	c.outsideNodeCIDRs()
	c.cidrsOnTwoNodes()
	c.cidrsNotInCiliumNode()
	c.cidrsOutsidePool()
	c.badCIDRs()
	c.cidrsNotOnAgent()
	sort.SliceStable(c.out, func(i, j int) bool {
		a, b := c.out[i], c.out[j]
		if a.Severity != b.Severity {
			return a.Severity == Error
		}
		if ka, kb := slices.Index(kindOrder, a.Kind), slices.Index(kindOrder, b.Kind); ka != kb {
			return ka < kb
		}
		return a.Objects() < b.Objects()
	})
	r := Report{
		Node: in.Node, Findings: c.out, Addresses: len(in.Allocations), NodeCIDRs: len(in.CIDRs),
		CiliumNodes: len(in.CiliumNodes), Pools: len(in.Pools), Pods: len(in.Pods),
	}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	for _, f := range r.Findings {
		if f.Severity == Error {
			r.Errors++
		} else {
			r.Notes++
		}
	}
	return r
}

type checker struct {
	in    Input
	self  *CiliumNode // this node's, nil if missing
	nodes map[string]*CiliumNode
	pools map[string]*tables.PodIPPool
	podsByUID,
	podsByKey map[string]Pod
	agentCIDRs map[netip.Prefix]*tables.NodePodCIDR
	out        []Finding
}

func newChecker(in Input) *checker {
	c := &checker{
		in: in, nodes: map[string]*CiliumNode{}, pools: map[string]*tables.PodIPPool{},
		podsByUID: map[string]Pod{}, podsByKey: map[string]Pod{}, agentCIDRs: map[netip.Prefix]*tables.NodePodCIDR{},
	}
	for _, n := range in.CiliumNodes {
		c.nodes[n.Name] = n
	}
	c.self = c.nodes[in.Node]
	for _, p := range in.Pools {
		c.pools[p.Name] = p
	}
	for _, p := range in.Pods {
		if p.UID != "" {
			c.podsByUID[p.UID] = p
		}
		c.podsByKey[p.Key()] = p
	}
	for _, r := range in.CIDRs {
		c.agentCIDRs[r.CIDR] = r
	}
	return c
}

func (c *checker) add(f Finding) { c.out = append(c.out, f) }

func (c *checker) missingCiliumNode() {
	if c.self != nil {
		return
	}
	c.add(Finding{
		Kind: KindNoCiliumNode, Severity: Error, Nodes: []string{c.in.Node},
		Problem: fmt.Sprintf("There is no CiliumNode %s: the node gets no pod CIDRs, and none of its CIDRs can be checked.", c.in.Node),
		Action: "release does not apply. The agent creates its CiliumNode at start: see its log and /healthz. " +
			"The pod CIDR allocator deletes a CiliumNode whose Node is gone: check that the Node exists.",
	})
}

// podGone reports whether the Pod an allocation was made for is gone from
// this node, and says how.
func (c *checker) podGone(a *tables.PodIPAllocation) (bool, string) {
	key := a.PodNS + "/" + a.PodName
	if a.PodUID != "" {
		if _, ok := c.podsByUID[a.PodUID]; ok {
			return false, ""
		}
		if p, ok := c.podsByKey[key]; ok {
			return true, fmt.Sprintf("Pod %s (uid %s) was deleted; a Pod of the same name exists now with uid %s", key, a.PodUID, p.UID)
		}
		return true, fmt.Sprintf("Pod %s (uid %s) no longer exists", key, a.PodUID)
	}
	p, ok := c.podsByKey[key]
	switch {
	case !ok:
		return true, fmt.Sprintf("Pod %s no longer exists", key)
	case p.NodeName != "" && p.NodeName != c.in.Node:
		return true, fmt.Sprintf("Pod %s runs on node %s now, not on %s", key, p.NodeName, c.in.Node)
	}
	return false, ""
}

// attachments groups the node's allocations by attachment, in address
// order: a DEL releases all of an attachment's addresses.
func (c *checker) attachments() [][]*tables.PodIPAllocation {
	by := map[string][]*tables.PodIPAllocation{}
	var keys []string
	for _, a := range c.in.Allocations {
		k := attachmentOf(a)
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], a)
	}
	out := make([][]*tables.PodIPAllocation, 0, len(keys))
	for _, k := range keys {
		as := by[k]
		sort.Slice(as, func(i, j int) bool { return as[i].IP.Less(as[j].IP) })
		out = append(out, as)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0].IP.Less(out[j][0].IP) })
	return out
}

func attachmentOf(a *tables.PodIPAllocation) string { return a.ContainerID + "/" + a.IfName }

func ipsOf(as []*tables.PodIPAllocation) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.IP.String()
	}
	return out
}

func andList(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// ReleaseCommand is the command that releases an address on this node.
func ReleaseCommand(ip string) string { return "herald-dbg ipam release " + ip }

// CIDRReleaseCommand is the command that removes a CIDR from a CiliumNode.
func CIDRReleaseCommand(cidr, node string) string {
	return fmt.Sprintf("herald-dbg ipam release --cidr %s --node %s", shellQuote(cidr), node)
}

// shellQuote quotes what a CiliumNode may hold that a shell would split or
// expand (a value that is not a CIDR).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "0123456789abcdefABCDEF.:/") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

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
