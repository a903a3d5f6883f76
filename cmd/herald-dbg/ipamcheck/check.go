package ipamcheck

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

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
