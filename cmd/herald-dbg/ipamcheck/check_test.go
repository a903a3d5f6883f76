package ipamcheck

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/tables"
)

var since = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func addr(s string) netip.Addr  { return netip.MustParseAddr(s) }

func alloc(ip, cidr, pod, uid, container string) *tables.PodIPAllocation {
	ns, name, _ := strings.Cut(pod, "/")
	return &tables.PodIPAllocation{
		IP: addr(ip), CIDR: pfx(cidr), Pool: "default", Network: "herald", ContainerID: container, IfName: "eth0",
		PodNS: ns, PodName: name, PodUID: uid, Since: since,
	}
}

func pool(name string, v4 ...string) *tables.PodIPPool {
	p := &tables.PodIPPool{Name: name, IPv4: &tables.PodPoolFamily{MaskSize: 24}, IPv6: &tables.PodPoolFamily{MaskSize: 120, CIDRs: []netip.Prefix{pfx("fd00:64::/104")}}}
	for _, c := range v4 {
		p.IPv4.CIDRs = append(p.IPv4.CIDRs, pfx(c))
	}
	return p
}

func cnode(name string, used map[string]string, pools ...tables.PoolCIDRs) *CiliumNode {
	n := &CiliumNode{Name: name, Allocated: pools, Used: map[netip.Addr]Use{}}
	for ip, owner := range used {
		n.Used[addr(ip)] = Use{Owner: owner, Pool: "default"}
	}
	return n
}

func pc(pool string, cidrs ...string) tables.PoolCIDRs {
	out := tables.PoolCIDRs{Pool: pool}
	for _, c := range cidrs {
		out.CIDRs = append(out.CIDRs, pfx(c))
	}
	return out
}

// healthy is node n1 with one dual-stack pod, ns/a, and a second node n2
// with a pod of its own: nothing to report.
func healthy() Input {
	return Input{
		Node: "n1",
		Allocations: []*tables.PodIPAllocation{
			alloc("198.18.64.10", "198.18.64.0/24", "ns/a", "uid-a", "c-a"),
			alloc("fd00:64::10", "fd00:64::/120", "ns/a", "uid-a", "c-a"),
		},
		CIDRs: []*tables.NodePodCIDR{
			{CIDR: pfx("198.18.64.0/24"), Pool: "default", InUse: 1, Usable: 253},
			{CIDR: pfx("fd00:64::/120"), Pool: "default", InUse: 1, Usable: 254},
		},
		Pods: []Pod{{Namespace: "ns", Name: "a", UID: "uid-a", NodeName: "n1"}},
		CiliumNodes: []*CiliumNode{
			cnode("n1", map[string]string{"198.18.64.10": "ns/a", "fd00:64::10": "ns/a"}, pc("default", "198.18.64.0/24", "fd00:64::/120")),
			cnode("n2", map[string]string{"198.18.65.10": "ns/b"}, pc("default", "198.18.65.0/24")),
		},
		Pools: []*tables.PodIPPool{pool("default", "198.18.64.0/20")},
	}
}

// want is what a finding must have; Problem is checked by substrings.
type want struct {
	kind     Kind
	severity Severity
	ips      []string
	cidrs    []string
	nodes    []string
	pod      string
	command  string
	problem  []string
}

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		name   string
		edit   func(*Input)
		want   []want
		errors int
	}{
		{name: "healthy", edit: func(*Input) {}},
		{
			name: "leaked: the pod is gone",
			edit: func(in *Input) { in.Pods = nil },
			want: []want{{
				kind: KindLeaked, severity: Error, ips: []string{"198.18.64.10", "fd00:64::10"}, nodes: []string{"n1"}, pod: "ns/a",
				command: "herald-dbg ipam release 198.18.64.10",
				problem: []string{"Pod ns/a (uid uid-a) no longer exists", "container c-a, interface eth0", "since 2025-01-02T03:04:05Z"},
			}},
			errors: 1,
		},
		{
			name: "leaked: a new pod of the same name",
			edit: func(in *Input) { in.Pods[0].UID = "uid-a2" },
			want: []want{{
				kind: KindLeaked, severity: Error, ips: []string{"198.18.64.10", "fd00:64::10"}, nodes: []string{"n1"}, pod: "ns/a",
				command: "herald-dbg ipam release 198.18.64.10",
				problem: []string{"was deleted; a Pod of the same name exists now with uid uid-a2"},
			}},
			errors: 1,
		},
		{
			name: "leaked: no uid recorded, the pod of that name is on another node",
			edit: func(in *Input) {
				for _, a := range in.Allocations {
					a.PodUID = ""
				}
				in.Pods[0].NodeName = "n2"
			},
			want: []want{{
				kind: KindLeaked, severity: Error, ips: []string{"198.18.64.10", "fd00:64::10"}, nodes: []string{"n1"}, pod: "ns/a",
				command: "herald-dbg ipam release 198.18.64.10", problem: []string{"runs on node n2 now"},
			}},
			errors: 1,
		},
		{
			name: "no uid recorded, the pod of that name is here: fine",
			edit: func(in *Input) {
				for _, a := range in.Allocations {
					a.PodUID = ""
				}
			},
		},
		{
			name: "one address on two nodes, both pods exist",
			edit: func(in *Input) { in.CiliumNodes[1].Used[addr("198.18.64.10")] = Use{Owner: "other/x", Pool: "default"} },
			want: []want{{
				kind: KindDuplicateAddress, severity: Error, ips: []string{"198.18.64.10"}, nodes: []string{"n1", "n2"},
				problem: []string{"pod ns/a on node n1 (container c-a, interface eth0)", "pod other/x on node n2"},
			}},
			errors: 1,
		},
		{
			name: "one address on two nodes, this node's pod is gone",
			edit: func(in *Input) {
				in.Pods = nil
				in.CiliumNodes[1].Used[addr("198.18.64.10")] = Use{Owner: "other/x", Pool: "default"}
			},
			want: []want{
				{kind: KindLeaked, severity: Error, ips: []string{"198.18.64.10", "fd00:64::10"}, nodes: []string{"n1"}, pod: "ns/a", command: "herald-dbg ipam release 198.18.64.10"},
				{kind: KindDuplicateAddress, severity: Error, ips: []string{"198.18.64.10"}, nodes: []string{"n1", "n2"}, pod: "ns/a", command: "herald-dbg ipam release 198.18.64.10"},
			},
			errors: 2,
		},
		{
			name: "one address held twice on this node",
			edit: func(in *Input) {
				in.Allocations = append(in.Allocations, alloc("198.18.64.10", "198.18.64.0/24", "ns/b", "uid-b", "c-b"))
				in.Pods = append(in.Pods, Pod{Namespace: "ns", Name: "b", UID: "uid-b", NodeName: "n1"})
			},
			want: []want{{
				kind: KindDuplicateAddress, severity: Error, ips: []string{"198.18.64.10"}, nodes: []string{"n1"},
				problem: []string{"pod ns/a on node n1 (container c-a", "pod ns/b on node n1 (container c-b"},
			}},
			errors: 1,
		},
		{
			name: "an address outside the node's CIDRs, its pod exists",
			edit: func(in *Input) {
				in.Allocations = append(in.Allocations, alloc("198.18.70.5", "198.18.70.0/24", "ns/c", "uid-c", "c-c"))
				in.Pods = append(in.Pods, Pod{Namespace: "ns", Name: "c", UID: "uid-c", NodeName: "n1"})
			},
			want: []want{{
				kind: KindOutsideNodeCIDRs, severity: Error, ips: []string{"198.18.70.5"}, cidrs: []string{"198.18.70.0/24"}, nodes: []string{"n1"}, pod: "ns/c",
				problem: []string{"lies outside every CIDR node n1 holds"},
			}},
			errors: 1,
		},
		{
			name: "an address outside the node's CIDRs, its pod is gone: one leak",
			edit: func(in *Input) {
				in.Allocations = append(in.Allocations, alloc("198.18.70.5", "198.18.70.0/24", "ns/c", "uid-c", "c-c"))
			},
			want: []want{{
				kind: KindLeaked, severity: Error, ips: []string{"198.18.70.5"}, nodes: []string{"n1"}, pod: "ns/c",
				command: "herald-dbg ipam release 198.18.70.5", problem: []string{"also lies outside every CIDR the node holds"},
			}},
			errors: 1,
		},
		{
			name: "a CIDR in two CiliumNodes, used by this node only",
			edit: func(in *Input) {
				in.CiliumNodes[1].Allocated[0].CIDRs = append(in.CiliumNodes[1].Allocated[0].CIDRs, pfx("198.18.64.0/24"))
			},
			want: []want{{
				kind: KindCIDROnTwoNodes, severity: Error, cidrs: []string{"198.18.64.0/24"}, nodes: []string{"n1", "n2"},
				command: "herald-dbg ipam release --cidr 198.18.64.0/24 --node n2",
				problem: []string{"listed in CiliumNode n1 (pool \"default\") and in CiliumNode n2", "node n1 uses 1 address of it (198.18.64.10)", "node n2 uses no address of it"},
			}},
			errors: 1,
		},
		{
			name: "overlapping CIDRs in two CiliumNodes",
			edit: func(in *Input) {
				in.CiliumNodes[1].Allocated = append(in.CiliumNodes[1].Allocated, pc("green", "198.18.64.128/25"))
			},
			want: []want{{
				kind: KindCIDROnTwoNodes, severity: Error, cidrs: []string{"198.18.64.0/24", "198.18.64.128/25"}, nodes: []string{"n1", "n2"},
				command: "herald-dbg ipam release --cidr 198.18.64.128/25 --node n2",
				problem: []string{"198.18.64.0/24 in CiliumNode n1 (pool \"default\") overlaps 198.18.64.128/25 in CiliumNode n2 (pool \"green\")"},
			}},
			errors: 1,
		},
		{
			name: "a CIDR in two other CiliumNodes, used by neither",
			edit: func(in *Input) {
				in.CiliumNodes[1].Allocated[0].CIDRs = append(in.CiliumNodes[1].Allocated[0].CIDRs, pfx("198.18.66.0/24"))
				in.CiliumNodes = append(in.CiliumNodes, cnode("n3", nil, pc("default", "198.18.66.0/24")))
			},
			want: []want{{
				kind: KindCIDROnTwoNodes, severity: Error, cidrs: []string{"198.18.66.0/24"}, nodes: []string{"n2", "n3"},
				problem: []string{"node n2 uses no address of it; node n3 uses no address of it"},
			}},
			errors: 1,
		},
		{
			name: "a CIDR in two CiliumNodes, used by both",
			edit: func(in *Input) {
				in.CiliumNodes[1].Allocated[0].CIDRs = append(in.CiliumNodes[1].Allocated[0].CIDRs, pfx("198.18.64.0/24"))
				in.CiliumNodes[1].Used[addr("198.18.64.20")] = Use{Owner: "ns/y", Pool: "default"}
			},
			want: []want{{
				kind: KindCIDROnTwoNodes, severity: Error, cidrs: []string{"198.18.64.0/24"}, nodes: []string{"n1", "n2"},
				problem: []string{"node n1 uses 1 address of it", "node n2 uses 1 address of it (198.18.64.20)"},
			}},
			errors: 1,
		},
		{
			name: "the agent has a CIDR its CiliumNode no longer lists, in use",
			edit: func(in *Input) {
				in.CIDRs = append(in.CIDRs, &tables.NodePodCIDR{CIDR: pfx("198.18.67.0/24"), Pool: "default", InUse: 1, Usable: 253, Gone: true})
				in.Allocations = append(in.Allocations, alloc("198.18.67.9", "198.18.67.0/24", "ns/a", "uid-a", "c-a2"))
			},
			want: []want{{
				kind: KindCIDRNotInCiliumNode, severity: Error, cidrs: []string{"198.18.67.0/24"}, nodes: []string{"n1"},
				problem: []string{"CiliumNode n1 no longer lists 198.18.67.0/24", "but the node uses 1 address of it"},
			}},
			errors: 1,
		},
		{
			name: "the agent has a CIDR its CiliumNode no longer lists, unused: a note",
			edit: func(in *Input) {
				in.CIDRs = append(in.CIDRs, &tables.NodePodCIDR{CIDR: pfx("198.18.67.0/24"), Pool: "default", Usable: 253})
			},
			want: []want{{kind: KindCIDRNotInCiliumNode, severity: Note, cidrs: []string{"198.18.67.0/24"}, nodes: []string{"n1"}, problem: []string{"nothing uses it"}}},
		},
		{
			name: "a CIDR the agent is releasing, already gone from its CiliumNode: fine",
			edit: func(in *Input) {
				in.CIDRs = append(in.CIDRs, &tables.NodePodCIDR{CIDR: pfx("198.18.67.0/24"), Pool: "default", Usable: 253, Releasing: true})
			},
		},
		{
			name: "the pool shrank under a CIDR in use: a note",
			edit: func(in *Input) { in.Pools = []*tables.PodIPPool{pool("default", "198.18.80.0/20")} },
			want: []want{{
				kind: KindCIDROutsidePool, severity: Note, cidrs: []string{"198.18.64.0/24"}, nodes: []string{"n1"},
				problem: []string{"outside the CIDRs of pool \"default\"", "node n1 uses 1 address of it"},
			}},
		},
		{
			name: "a CIDR of a pool that is gone, unused",
			edit: func(in *Input) {
				in.CiliumNodes[0].Allocated = append(in.CiliumNodes[0].Allocated, pc("old", "198.18.90.0/24"))
				in.CIDRs = append(in.CIDRs, &tables.NodePodCIDR{CIDR: pfx("198.18.90.0/24"), Pool: "old", Usable: 253})
			},
			want: []want{{
				kind: KindCIDROutsidePool, severity: Error, cidrs: []string{"198.18.90.0/24"}, nodes: []string{"n1"},
				command: "herald-dbg ipam release --cidr 198.18.90.0/24 --node n1", problem: []string{"pool \"old\", which does not exist", "nothing uses it"},
			}},
			errors: 1,
		},
		{
			name: "a CiliumNode lists something that is not a CIDR",
			edit: func(in *Input) {
				in.CiliumNodes[1].BadCIDRs = []BadCIDR{{Pool: "default", Value: "198.18.65.0/24 x", Err: "bad"}}
			},
			want: []want{{
				kind: KindBadCIDR, severity: Error, cidrs: []string{"198.18.65.0/24 x"}, nodes: []string{"n2"},
				command: "herald-dbg ipam release --cidr '198.18.65.0/24 x' --node n2",
			}},
			errors: 1,
		},
		{
			name: "the CiliumNode lists a CIDR the agent does not have yet: a note",
			edit: func(in *Input) {
				in.CiliumNodes[0].Allocated[0].CIDRs = append(in.CiliumNodes[0].Allocated[0].CIDRs, pfx("198.18.66.0/24"))
			},
			want: []want{{kind: KindCIDRNotOnAgent, severity: Note, cidrs: []string{"198.18.66.0/24"}, nodes: []string{"n1"}}},
		},
		{
			name:   "no CiliumNode for this node",
			edit:   func(in *Input) { in.CiliumNodes = in.CiliumNodes[1:] },
			want:   []want{{kind: KindNoCiliumNode, severity: Error, nodes: []string{"n1"}}},
			errors: 1,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := healthy()
			tt.edit(&in)
			r := Check(in)
			if len(r.Findings) != len(tt.want) {
				t.Fatalf("got %d findings, want %d:\n%s", len(r.Findings), len(tt.want), dump(r.Findings))
			}
			for i, w := range tt.want {
				f := r.Findings[i]
				got := fmt.Sprintf("%s %s ips=%v cidrs=%v nodes=%v pod=%q command=%q", f.Kind, f.Severity, f.IPs, f.CIDRs, f.Nodes, f.Pod, f.Command)
				exp := fmt.Sprintf("%s %s ips=%v cidrs=%v nodes=%v pod=%q command=%q", w.kind, w.severity, w.ips, w.cidrs, w.nodes, w.pod, w.command)
				if got != exp {
					t.Errorf("finding %d:\n got %s\nwant %s\n(%s)", i, got, exp, f.Problem)
				}
				for _, s := range w.problem {
					if !strings.Contains(f.Problem, s) {
						t.Errorf("finding %d: problem %q does not say %q", i, f.Problem, s)
					}
				}
				if f.Problem == "" || f.Action == "" {
					t.Errorf("finding %d has no problem or no action: %+v", i, f)
				}
			}
			notes := len(tt.want) - tt.errors
			if r.Errors != tt.errors || r.Notes != notes {
				t.Errorf("%d errors and %d notes, want %d and %d", r.Errors, r.Notes, tt.errors, notes)
			}
		})
	}
}

func dump(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s %s: %s | %s | %s\n", f.Severity, f.Kind, f.Objects(), f.Problem, f.Action, f.Command)
	}
	return b.String()
}

// TestLeakMentionsGC: a leak says that the agent releases it by itself
// too (so that nobody races the agent believing nothing else will), also
// for an address of a CIDR the node no longer has.
func TestLeakMentionsGC(t *testing.T) {
	in := healthy()
	in.Pods = nil
	in.Allocations = append(in.Allocations, alloc("198.18.70.5", "198.18.70.0/24", "ns/c", "uid-c", "c-c"))
	r := Check(in)
	leaks := 0
	for _, f := range r.Findings {
		if f.Kind != KindLeaked {
			continue
		}
		leaks++
		if !strings.Contains(f.Action, "own garbage collection does the same a minute or two after the Pod went") {
			t.Errorf("leak of %v does not mention the agent's garbage collection: %s", f.IPs, f.Action)
		}
	}
	if leaks < 2 {
		t.Fatalf("want the healthy input's leaks and the one outside the node's CIDRs, got:\n%s", dump(r.Findings))
	}
}

// TestErrorsBeforeNotes: errors come first whatever the kinds' order.
func TestErrorsBeforeNotes(t *testing.T) {
	in := healthy()
	in.CIDRs = append(in.CIDRs, &tables.NodePodCIDR{CIDR: pfx("198.18.67.0/24"), Pool: "default"}) // note
	in.CiliumNodes[1].BadCIDRs = []BadCIDR{{Pool: "default", Value: "x", Err: "bad"}}              // error
	r := Check(in)
	var order []Severity
	for _, f := range r.Findings {
		order = append(order, f.Severity)
	}
	if !slices.Equal(order, []Severity{Error, Note}) {
		t.Fatalf("order %v:\n%s", order, dump(r.Findings))
	}
}

func TestOverlaps(t *testing.T) {
	h := func(node, p string) holding { return holding{node: node, pool: "p", prefix: pfx(p)} }
	got := overlaps([]holding{
		h("a", "198.18.0.0/16"), h("b", "198.18.1.0/24"), h("c", "198.18.1.128/25"), h("c", "198.18.2.0/24"),
		h("a", "198.19.0.0/24"), h("b", "198.19.1.0/24"), // disjoint
		h("a", "fd00::/120"), h("b", "fd00::/120"), // IPv6, equal
		h("d", "198.20.0.0/16"), h("d", "198.20.1.0/24"), // one node's own: not two nodes
		h("e", "::/0"), // IPv6 only: the IPv4 prefixes are no part of it
	})
	var s []string
	for _, p := range got {
		s = append(s, p[0].prefix.String()+"@"+p[0].node+" ~ "+p[1].prefix.String()+"@"+p[1].node)
	}
	slices.Sort(s)
	want := []string{
		"198.18.0.0/16@a ~ 198.18.1.0/24@b",
		"198.18.0.0/16@a ~ 198.18.1.128/25@c",
		"198.18.0.0/16@a ~ 198.18.2.0/24@c",
		"198.18.1.0/24@b ~ 198.18.1.128/25@c",
		"::/0@e ~ fd00::/120@a",
		"::/0@e ~ fd00::/120@b",
		"fd00::/120@a ~ fd00::/120@b",
	}
	if !slices.Equal(s, want) {
		t.Fatalf("overlaps:\n%s\nwant:\n%s", strings.Join(s, "\n"), strings.Join(want, "\n"))
	}
}

func TestCiliumNodeFromK8s(t *testing.T) {
	n := &v2.CiliumNode{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}
	n.Spec.IPAM.Pools.Allocated = []v2.IPAMPoolAllocation{{Pool: "default", CIDRs: []v2.IPAMPodCIDR{"198.18.65.7/24", "nonsense"}}}
	n.Status.IPAM.Used = v2.AllocationMap{"198.18.65.10": {Owner: "ns/b", Resource: "default"}, "not-an-ip": {Owner: "x"}}
	got := CiliumNodeFromK8s(n)
	if len(got.Allocated) != 1 || !slices.Equal(got.Allocated[0].CIDRs, []netip.Prefix{pfx("198.18.65.0/24")}) {
		t.Errorf("allocated %+v, want 198.18.65.0/24 (masked) alone", got.Allocated)
	}
	if len(got.BadCIDRs) != 1 || got.BadCIDRs[0].Value != "nonsense" || got.BadCIDRs[0].Pool != "default" {
		t.Errorf("bad CIDRs %+v", got.BadCIDRs)
	}
	if len(got.Used) != 1 || got.Used[addr("198.18.65.10")] != (Use{Owner: "ns/b", Pool: "default"}) {
		t.Errorf("used %+v", got.Used)
	}
}
