package migrate

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

func TestOrSelectors(t *testing.T) {
	host := func(h string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/hostname": h}}
	}
	for _, tc := range []struct {
		name string
		in   []metav1.LabelSelector
		want string // the merged In values; "" for nil
		ok   bool
	}{
		{"none: every object", nil, "", true},
		{"one", []metav1.LabelSelector{host("a")}, "a", true},
		{"same key merges", []metav1.LabelSelector{host("a"), host("b"), host("a")}, "a,b", true},
		{"In and a label merge", []metav1.LabelSelector{host("a"), {MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/hostname", Operator: metav1.LabelSelectorOpIn, Values: []string{"c", "d"}}}}}, "a,c,d", true},
		{"different keys do not", []metav1.LabelSelector{host("a"), {MatchLabels: map[string]string{"rack": "1"}}}, "", false},
		{"two labels do not", []metav1.LabelSelector{host("a"), {MatchLabels: map[string]string{"kubernetes.io/hostname": "b", "rack": "1"}}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, ok := orSelectors(tc.in)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			got := ""
			if sel != nil && len(sel.MatchExpressions) > 0 {
				got = strings.Join(sel.MatchExpressions[0].Values, ",")
			} else if sel != nil {
				got = sel.MatchLabels["kubernetes.io/hostname"]
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAvoidBuggyIPs(t *testing.T) {
	for _, tc := range []struct {
		addresses string
		want      Verdict
	}{
		{"192.168.1.0/24", Exact},          // .0 and .255 are the first and the last
		{"10.0.0.0/16", Approximate},       // MetalLB also avoids 10.0.1.0, 10.0.0.255, ...
		{"192.168.1.0/25", Approximate},    // Herald keeps back .127, MetalLB does not
		{"192.168.1.5/32", Exact},          // neither keeps anything back
		{"192.168.1.0/32", Approximate},    // MetalLB avoids it, Herald does not
		{"192.168.9.1-192.168.9.5", Exact}, // no .0 nor .255 in it
		{"192.168.9.200-192.168.10.5", Approximate},
		{"fc00::/124", Approximate}, // Herald keeps back the first and last, MetalLB nothing
		{"fc00::1/128", Exact},
		{"192.168.1.0/24,192.168.2.0/23", Approximate},
	} {
		t.Run(tc.addresses, func(t *testing.T) {
			var p IPAddressPool
			p.Kind, p.Metadata.Name = "IPAddressPool", "p"
			p.Spec.Addresses = strings.Split(tc.addresses, ",")
			p.Spec.AvoidBuggyIPs = true
			pool, fs := translatePool(p)
			if pool.Spec.AllowFirstLastIPs != v2alpha1.AllowFirstLastIPNo {
				t.Fatalf("allowFirstLastIPs %q", pool.Spec.AllowFirstLastIPs)
			}
			if f := find(t, fs, "spec.avoidBuggyIPs"); f.Verdict != tc.want {
				t.Fatalf("%s, want %s", f, tc.want)
			}
		})
	}
}

func TestServiceAllocation(t *testing.T) {
	sel := func(k, v string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	var p IPAddressPool
	p.Kind, p.Metadata.Name = "IPAddressPool", "p"
	p.Spec.Addresses = []string{"198.18.0.0/24", "not-an-address", "198.18.1.9-198.18.1.1"}
	p.Spec.AutoAssign = new(bool)
	p.Spec.ServiceAllocation = &struct {
		Priority           int                    `json:"priority,omitempty"`
		Namespaces         []string               `json:"namespaces,omitempty"`
		NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`
		ServiceSelectors   []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
	}{Namespaces: []string{"a"}, ServiceSelectors: []metav1.LabelSelector{sel("app", "x"), sel("tier", "y")}}
	pool, fs := translatePool(p)

	if len(pool.Spec.Blocks) != 1 || pool.Spec.Blocks[0].Cidr != "198.18.0.0/24" {
		t.Errorf("blocks %+v", pool.Spec.Blocks)
	}
	if f := find(t, fs, `spec.addresses[1] "not-an-address"`); f.Verdict != None {
		t.Errorf("%s", f)
	}
	if f := find(t, fs, `spec.addresses[2] "198.18.1.9-198.18.1.1"`); f.Verdict != None || !strings.Contains(f.Reason, "after its end") {
		t.Errorf("%s", f)
	}
	if pool.Annotations["lbipam.herald.io/auto-assign"] != "false" {
		t.Errorf("annotations %v", pool.Annotations)
	}
	// The two service selectors cannot be OR'ed into one: only the
	// namespace is kept, and the report says the pool serves more Services.
	if f := find(t, fs, "spec.serviceAllocation.serviceSelectors"); f.Verdict != None {
		t.Errorf("%s", f)
	}
	want := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: serviceNamespaceLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}}}
	if got := pool.Spec.ServiceSelector; got == nil || got.String() != want.String() {
		t.Errorf("serviceSelector %v, want %v", got, want)
	}
}

func TestCommunities(t *testing.T) {
	var a BGPAdvertisement
	a.Kind, a.Metadata.Name = "BGPAdvertisement", "a"
	a.Spec.Communities = []string{"65000:1", "large:65000:1:2", "alias", "bogus", "1:2:3"}
	obj, fs := translateBGPAdvert(a, map[string]string{"alias": "large:1:2:3"})
	c := obj.Spec.Advertisements[0].Attributes.Communities
	if got := []any{c.Standard, c.Large}; len(c.Standard) != 1 || len(c.Large) != 2 || c.Large[1] != "1:2:3" {
		t.Errorf("communities %v", got)
	}
	for field, want := range map[string]Verdict{`spec.communities[3] "bogus"`: None, `spec.communities[4] "1:2:3"`: None, `spec.communities[2] "alias"`: Exact} {
		if f := find(t, fs, field); f.Verdict != want {
			t.Errorf("%s, want %s", f, want)
		}
	}
}

func TestDecode(t *testing.T) {
	const doc = `
apiVersion: v1
kind: List
items:
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata: {name: p, namespace: metallb-system}
  spec: {addresses: [198.18.0.0/24], futureField: 1}
- apiVersion: metallb.io/v1beta1
  kind: ServiceL2Status
  metadata: {name: s}
`
	var in Input
	if err := in.Decode(strings.NewReader(doc), "doc"); err != nil {
		t.Fatal(err)
	}
	if len(in.Pools) != 1 || len(in.Findings) != 2 {
		t.Fatalf("pools %d, findings %v", len(in.Pools), in.Findings)
	}
	if !strings.Contains(in.Findings[0].Reason, "futureField") || !strings.Contains(in.Findings[1].Reason, "no equivalent") {
		t.Errorf("findings %v", in.Findings)
	}
	if err := in.Decode(strings.NewReader("just a string"), "bad.yaml"); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("error %v", err)
	}
}

func TestTimers(t *testing.T) {
	var p BGPPeer
	p.Kind, p.Metadata.Name = "BGPPeer", "p"
	p.Spec.PeerAddress = "198.18.0.1"
	p.Spec.HoldTime = &metav1.Duration{Duration: 1500 * 1e6}      // 1.5 s: below Herald's 3 s
	p.Spec.KeepaliveTime = &metav1.Duration{Duration: 2500 * 1e6} // 2.5 s: rounded
	pc, fs := translatePeer(p, nil, nil)
	if f := find(t, fs, "spec.holdTime"); f.Verdict != None {
		t.Errorf("%s", f)
	}
	if f := find(t, fs, "spec.keepaliveTime"); f.Verdict != Approximate || *pc.Spec.Timers.KeepAliveTimeSeconds != 2 {
		t.Errorf("%s", f)
	}
	if len(pc.Spec.Families) != 1 || pc.Spec.Families[0].Afi != "ipv4" {
		t.Errorf("families %+v", pc.Spec.Families)
	}
}

func find(t *testing.T, fs []Finding, field string) Finding {
	t.Helper()
	for _, f := range fs {
		if f.Field == field {
			return f
		}
	}
	t.Fatalf("no finding on %s in %v", field, fs)
	return Finding{}
}

// TestSameName: MetalLB objects are namespaced, Herald's cluster-wide; the
// second of two peers named alike is reported and left out everywhere.
func TestSameName(t *testing.T) {
	peer := func(ns, addr string) BGPPeer {
		var p BGPPeer
		p.Kind, p.Metadata.Name, p.Metadata.Namespace = "BGPPeer", "tor", ns
		p.Spec.MyASN, p.Spec.PeerASN, p.Spec.PeerAddress = 65001, 65000, addr
		return p
	}
	res := Translate(Input{Peers: []BGPPeer{peer("b", "198.18.0.2"), peer("a", "198.18.0.1")}})
	var kinds []string
	for _, obj := range res.Objects {
		kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().Kind)
	}
	if strings.Join(kinds, ",") != "CiliumBGPPeerConfig,CiliumBGPClusterConfig" {
		t.Fatalf("objects %v", kinds)
	}
	cc := res.Objects[1].(*v2alpha1.CiliumBGPClusterConfig)
	if peers := cc.Spec.BGPInstances[0].Peers; len(peers) != 1 || *peers[0].PeerAddress != "198.18.0.1" {
		t.Fatalf("cluster config peers %+v", peers)
	}
	var dup bool
	for _, f := range res.Findings {
		dup = dup || (f.Source == "BGPPeer b/tor" && f.Verdict == None && strings.Contains(f.Reason, "already made from BGPPeer a/tor"))
	}
	if !dup {
		t.Fatalf("no finding on the second peer: %v", res.Findings)
	}
}

// A MetalLB peer on an interface (unnumbered BGP) becomes an
// autoDiscovery mode Unnumbered peer negotiating both families.
func TestUnnumberedPeer(t *testing.T) {
	var p BGPPeer
	p.Kind, p.Metadata.Name = "BGPPeer", "leaf"
	p.Spec.MyASN, p.Spec.PeerASN, p.Spec.Interface = 65001, 65000, "eth1"
	ccs, fs := clusterConfigs([]BGPPeer{p})
	if f := find(t, fs, "spec.interface"); f.Verdict != Exact {
		t.Errorf("%s", f)
	}
	peer := ccs[0].Spec.BGPInstances[0].Peers[0]
	if peer.PeerAddress != nil || peer.AutoDiscovery == nil || peer.AutoDiscovery.Mode != v2alpha1.BGPUnnumberedMode ||
		peer.AutoDiscovery.Unnumbered == nil || peer.AutoDiscovery.Unnumbered.Interface != "eth1" {
		t.Errorf("peer %+v", peer)
	}
	pc, _ := translatePeer(p, nil, nil)
	if len(pc.Spec.Families) != 2 {
		t.Errorf("families %+v, want ipv4 and ipv6", pc.Spec.Families)
	}
}

// TestTimerAlone: MetalLB derives the timer a BGPPeer leaves out from the
// other; Herald's default for it would differ, or be refused.
func TestTimerAlone(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		hold, keepalive         time.Duration
		wantHold, wantKeepalive int32
	}{
		{"hold time below Herald's default keepalive", 10 * time.Second, 0, 10, 3},
		{"hold time above Herald's default", 9 * time.Minute, 0, 540, 180},
		{"keepalive only", 0, 60 * time.Second, 180, 60},
		{"keepalive beyond the hold time Herald takes", 0, 30000 * time.Second, 65535, 30000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p BGPPeer
			p.Kind, p.Metadata.Name = "BGPPeer", "p"
			p.Spec.PeerAddress = "198.18.0.1"
			if tc.hold != 0 {
				p.Spec.HoldTime = &metav1.Duration{Duration: tc.hold}
			}
			if tc.keepalive != 0 {
				p.Spec.KeepaliveTime = &metav1.Duration{Duration: tc.keepalive}
			}
			pc, fs := translatePeer(p, nil, nil)
			if tm := pc.Spec.Timers; tm == nil || tm.HoldTimeSeconds == nil || tm.KeepAliveTimeSeconds == nil ||
				*tm.HoldTimeSeconds != tc.wantHold || *tm.KeepAliveTimeSeconds != tc.wantKeepalive {
				t.Errorf("timers %+v, want hold %d keepalive %d", tm, tc.wantHold, tc.wantKeepalive)
			}
			find(t, fs, "spec.holdTime")
			find(t, fs, "spec.keepaliveTime")
			if errs := tables.BGPPeerConfigFromK8s(pc).Errors; len(errs) > 0 {
				t.Errorf("the agent refuses the peer config: %v", errs)
			}
		})
	}
}

// TestDecodeNamesObject: a malformed object in a List (kubectl get -o
// yaml, or the cluster's) is named in the error, beside the file.
func TestDecodeNamesObject(t *testing.T) {
	const doc = `
apiVersion: v1
kind: List
items:
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata: {name: good, namespace: metallb-system}
  spec: {addresses: [198.18.0.0/24]}
- apiVersion: metallb.io/v1beta1
  kind: IPAddressPool
  metadata: {name: broken, namespace: metallb-system}
  spec: {addresses: 198.18.1.0/24}
`
	var in Input
	err := in.Decode(strings.NewReader(doc), "backup.yaml")
	if err == nil || !strings.Contains(err.Error(), "backup.yaml") || !strings.Contains(err.Error(), "IPAddressPool metallb-system/broken") {
		t.Fatalf("error %v, want one naming backup.yaml and IPAddressPool metallb-system/broken", err)
	}
}
