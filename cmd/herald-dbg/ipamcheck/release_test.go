package ipamcheck

import (
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

func TestPlanIPRelease(t *testing.T) {
	for _, tt := range []struct {
		name    string
		edit    func(*Input)
		ip      string
		force   bool
		err     []string // substrings; nil: a plan
		warning bool
	}{
		{name: "leaked: the DEL of its attachment", edit: func(in *Input) { in.Pods = nil }, ip: "fd00:64::10"},
		{name: "the pod exists: refused", edit: func(*Input) {}, ip: "198.18.64.10",
			err: []string{"refusing to release 198.18.64.10", "pod ns/a (uid uid-a) still exists on node n1", "198.18.64.10, fd00:64::10", "--force"}},
		{name: "the pod exists, forced", edit: func(*Input) {}, ip: "198.18.64.10", force: true, warning: true},
		{name: "a new pod of the same name: leaked", edit: func(in *Input) { in.Pods[0].UID = "uid-new" }, ip: "198.18.64.10"},
		{name: "not allocated here", edit: func(*Input) {}, ip: "198.18.64.11",
			err: []string{"198.18.64.11 is not allocated on node n1", "nothing to release"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := healthy()
			tt.edit(&in)
			plan, err := PlanIPRelease(in, addr(tt.ip), tt.force)
			if !planned(t, plan, err, tt.err) {
				return
			}
			want := ipamv1.DelRequest{Attachment: ipamv1.Attachment{ContainerID: "c-a", IfName: "eth0"}, Pod: ipamv1.PodRef{Namespace: "ns", Name: "a", UID: "uid-a"}}
			if plan.Del != want {
				t.Errorf("DEL %+v, want %+v", plan.Del, want)
			}
			if !slices.Equal(plan.IPs, []netip.Addr{addr("198.18.64.10"), addr("fd00:64::10")}) {
				t.Errorf("releases %v, want both addresses of the attachment", plan.IPs)
			}
			if (plan.Warning != "") != tt.warning {
				t.Errorf("warning %q, want one: %v", plan.Warning, tt.warning)
			}
		})
	}
}

func k8sNode(used map[string]string, pools ...v2.IPAMPoolAllocation) *v2.CiliumNode {
	n := &v2.CiliumNode{ObjectMeta: metav1.ObjectMeta{Name: "n2", ResourceVersion: "7"}}
	n.Spec.IPAM.Pools.Allocated = pools
	n.Status.IPAM.Used = v2.AllocationMap{}
	for ip, owner := range used {
		n.Status.IPAM.Used[ip] = v2.AllocationIP{Owner: owner, Resource: "default"}
	}
	return n
}

func k8sPool(pool string, cidrs ...string) v2.IPAMPoolAllocation {
	a := v2.IPAMPoolAllocation{Pool: pool}
	for _, c := range cidrs {
		a.CIDRs = append(a.CIDRs, v2.IPAMPodCIDR(c))
	}
	return a
}

func TestPlanCIDRRelease(t *testing.T) {
	used := map[string]string{"198.18.65.10": "ns/b"}
	for _, tt := range []struct {
		name    string
		node    *v2.CiliumNode
		cidr    string
		local   []*tables.PodIPAllocation
		force   bool
		want    string // the new allocated list as JSON
		removed string
		inUse   []string
		err     []string
	}{
		{
			name: "unused: removed, the rest kept in order, entries that do not parse too",
			node: k8sNode(used, k8sPool("default", "198.18.65.0/24", "198.18.64.0/24", "junk"), k8sPool("green", "198.18.80.0/24")),
			cidr: "198.18.64.0/24", removed: "198.18.64.0/24",
			want: `[{"pool":"default","cidrs":["198.18.65.0/24","junk"]},{"pool":"green","cidrs":["198.18.80.0/24"]}]`,
		},
		{
			name: "matched as a CIDR: host bits and spelling do not matter",
			node: k8sNode(nil, k8sPool("default", "fd00:64:0:0::100/120")),
			cidr: "fd00:64::1ff/120", removed: "fd00:64:0:0::100/120",
			want: `[]`,
		},
		{
			name: "a pool left empty goes",
			node: k8sNode(used, k8sPool("default", "198.18.65.0/24"), k8sPool("green", "198.18.80.0/24")),
			cidr: "198.18.80.0/24", removed: "198.18.80.0/24",
			want: `[{"pool":"default","cidrs":["198.18.65.0/24"]}]`,
		},
		{
			name: "an entry that is not a CIDR, as written",
			node: k8sNode(used, k8sPool("default", "198.18.65.0/24", "198.18.65.0/24 x")),
			cidr: "198.18.65.0/24 x", removed: "198.18.65.0/24 x",
			want: `[{"pool":"default","cidrs":["198.18.65.0/24"]}]`,
		},
		{
			name: "in use by status.ipam.used: refused",
			node: k8sNode(used, k8sPool("default", "198.18.65.0/24")),
			cidr: "198.18.65.0/24",
			err:  []string{"refusing to remove 198.18.65.0/24 from CiliumNode n2", "node n2 uses 1 address of 198.18.65.0/24 (198.18.65.10)", "--force"},
		},
		{
			name: "in use by the local agent's tables: refused",
			node: k8sNode(nil, k8sPool("default", "198.18.65.0/24")),
			cidr: "198.18.65.0/24", local: []*tables.PodIPAllocation{alloc("198.18.65.33", "198.18.65.0/24", "ns/c", "u", "c")},
			err: []string{"uses 1 address of 198.18.65.0/24 (198.18.65.33)"},
		},
		{
			name: "in use, forced",
			node: k8sNode(used, k8sPool("default", "198.18.65.0/24")), force: true,
			cidr: "198.18.65.0/24", removed: "198.18.65.0/24", inUse: []string{"198.18.65.10"},
			want: `[]`,
		},
		{
			name: "not listed",
			node: k8sNode(nil, k8sPool("default", "198.18.65.0/24")),
			cidr: "198.18.66.0/24",
			err:  []string{"CiliumNode n2 does not list 198.18.66.0/24", "it lists: 198.18.65.0/24 (pool default)"},
		},
		{
			name: "neither a CIDR nor an entry",
			node: k8sNode(nil),
			cidr: "nonsense",
			err:  []string{`"nonsense" is not a CIDR`, "it lists: nothing"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := PlanCIDRRelease(tt.node, tt.cidr, tt.local, tt.force)
			if !planned(t, plan, err, tt.err) {
				return
			}
			got, _ := json.Marshal(plan.Allocated)
			if string(got) != tt.want {
				t.Errorf("allocated %s, want %s", got, tt.want)
			}
			if plan.Removed != tt.removed {
				t.Errorf("removed %q, want %q", plan.Removed, tt.removed)
			}
			var inUse []string
			for _, a := range plan.InUse {
				inUse = append(inUse, a.String())
			}
			if !slices.Equal(inUse, tt.inUse) || (plan.Warning != "") != (len(tt.inUse) > 0) {
				t.Errorf("in use %v (warning %q), want %v", inUse, plan.Warning, tt.inUse)
			}
		})
	}
}

// planned checks a plan's error against want, the phrases the error must
// say (none: no error), and tells whether the case goes on to check the
// plan itself.
func planned(t *testing.T, plan any, err error, want []string) bool {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatal(err)
		}
		return true
	}
	if err == nil {
		t.Fatalf("planned %+v, want an error", plan)
	}
	for _, s := range want {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	return false
}
