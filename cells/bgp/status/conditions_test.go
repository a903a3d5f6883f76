package status

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

// The cluster config's conditions: every type present, Cilium's reasons
// and messages; a conflict is told to the config that does not own the
// node, not to its owner.
func TestClusterConfigConditions(t *testing.T) {
	rack := func(r string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"rack": r}}
	}
	nodes := []*tables.Node{{Name: "n1", Labels: map[string]string{"rack": "1"}}, {Name: "n2", Labels: map[string]string{"rack": "2"}}}
	pcs := map[string]*tables.BGPPeerConfig{"there": {Name: "there"}}
	owners := map[string]string{"n1": "a", "n2": "b"}
	for _, tt := range []struct {
		name string
		cc   *tables.BGPClusterConfig
		want []tables.BGPCondition // NoMatchingNode, MissingPeerConfigs, ConflictingClusterConfig, InvalidSpec
	}{
		{"all well: every condition False", &tables.BGPClusterConfig{Name: "a", NodeSelector: rack("1"),
			Instances: []tables.BGPInstanceSpec{{Name: "i", Peers: []tables.BGPPeerSpec{{Name: "p", PeerConfig: "there"}}}}},
			[]tables.BGPCondition{
				{Type: "cilium.io/NoMatchingNode", Reason: "NoMatchingNode", Message: "No node matches spec.nodeSelector"},
				{Type: "cilium.io/MissingPeerConfigs", Reason: "MissingPeerConfigs"},
				{Type: "cilium.io/ConflictingClusterConfig", Reason: "ConflictingClusterConfigs"},
				{Type: "cilium.io/InvalidSpec", Reason: "InvalidSpec"},
			}},
		{"no node, missing peer configs (sorted, once each), a bad address", &tables.BGPClusterConfig{Name: "c", NodeSelector: rack("9"),
			Instances: []tables.BGPInstanceSpec{{Name: "i", Peers: []tables.BGPPeerSpec{{Name: "p", PeerConfig: "zz"}, {Name: "q", PeerConfig: "there"},
				{Name: "r", PeerConfig: "aa", AddressError: `"x" is not an IP address`}, {Name: "s", PeerConfig: "zz"}}}}},
			[]tables.BGPCondition{
				{Type: "cilium.io/NoMatchingNode", True: true, Reason: "NoMatchingNode", Message: "No node matches spec.nodeSelector"},
				{Type: "cilium.io/MissingPeerConfigs", True: true, Reason: "MissingPeerConfigs", Message: "Referenced CiliumBGPPeerConfig(s) are missing: [aa zz]"},
				{Type: "cilium.io/ConflictingClusterConfig", Reason: "ConflictingClusterConfigs"},
				{Type: "cilium.io/InvalidSpec", True: true, Reason: "InvalidSpec", Message: `instance "i" peer "r": peerAddress "x" is not an IP address`},
			}},
		{"selects nodes owned by others: told, with the owners", &tables.BGPClusterConfig{Name: "z"},
			[]tables.BGPCondition{
				{Type: "cilium.io/NoMatchingNode", Reason: "NoMatchingNode", Message: "No node matches spec.nodeSelector"},
				{Type: "cilium.io/MissingPeerConfigs", Reason: "MissingPeerConfigs"},
				{Type: "cilium.io/ConflictingClusterConfig", True: true, Reason: "ConflictingClusterConfigs", Message: "Selecting the same node(s) with ClusterConfig(s): [a b]"},
				{Type: "cilium.io/InvalidSpec", Reason: "InvalidSpec"},
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := clusterConfigConditions(tt.cc, nodes, pcs, owners)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestPeerConfigConditions(t *testing.T) {
	secrets := map[string]*tables.BGPSecret{"ok": {Name: "ok", HasPassword: true}, "empty": {Name: "empty"}}
	for _, tt := range []struct {
		secret string
		want   tables.BGPCondition
	}{
		{"", tables.BGPCondition{Type: "cilium.io/MissingAuthSecret", Reason: "MissingAuthSecret"}},
		{"ok", tables.BGPCondition{Type: "cilium.io/MissingAuthSecret", Reason: "MissingAuthSecret"}},
		{"gone", tables.BGPCondition{Type: "cilium.io/MissingAuthSecret", True: true, Reason: "MissingAuthSecret", Message: `Referenced Auth Secret "gone" is missing`}},
		{"empty", tables.BGPCondition{Type: "cilium.io/MissingAuthSecret", True: true, Reason: "MissingAuthSecret", Message: `Referenced Auth Secret "empty" has no "password" key`}},
	} {
		got := peerConfigConditions(&tables.BGPPeerConfig{Name: "pc", AuthSecret: tt.secret}, secrets)
		if len(got) != 2 || got[0] != tt.want || got[1] != (tables.BGPCondition{Type: "cilium.io/InvalidSpec", Reason: "InvalidSpec"}) {
			t.Errorf("secret %q: %+v, want %+v and InvalidSpec False", tt.secret, got, tt.want)
		}
	}
}

func TestApplyConditions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	managed := []string{"x/A", "x/B"}
	ok := []tables.BGPCondition{{Type: "x/B", Reason: "B"}, {Type: "x/A", Reason: "A"}}
	// All well: each condition present, False, sorted by type; another
	// writer's condition is kept.
	other := metav1.Condition{Type: "other/C", Status: metav1.ConditionTrue}
	conds, changed := applyConditions([]metav1.Condition{other}, ok, managed, 1, t0)
	if !changed || len(conds) != 3 || conds[0].Type != "other/C" || conds[1].Type != "x/A" || conds[1].Status != metav1.ConditionFalse || conds[1].Reason != "A" {
		t.Fatalf("%+v", conds)
	}
	// Unchanged: no write, the transition time stays.
	again, changed := applyConditions(conds, ok, managed, 1, t0.Add(time.Hour))
	if changed || !again[1].LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("%+v %v", again, changed)
	}
	// A problem: True with its message, a new transition time.
	broken := []tables.BGPCondition{{Type: "x/A", True: true, Reason: "A", Message: "broken"}, {Type: "x/B", Reason: "B"}}
	conds, changed = applyConditions(conds, broken, managed, 2, t0.Add(time.Hour))
	if !changed || conds[1].Status != metav1.ConditionTrue || conds[1].Message != "broken" || conds[1].ObservedGeneration != 2 ||
		!conds[1].LastTransitionTime.Time.Equal(t0.Add(time.Hour)) || !conds[2].LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("%+v", conds)
	}
	// Status reporting off: Herald's conditions go, the other stays.
	conds, changed = applyConditions(conds, nil, managed, 2, t0)
	if !changed || len(conds) != 1 || conds[0] != other {
		t.Fatalf("%+v %v", conds, changed)
	}
	if _, changed = applyConditions(conds, nil, managed, 2, t0); changed {
		t.Fatalf("nothing left to remove, yet a change")
	}
}

func TestNodeStatus(t *testing.T) {
	inst := &tables.BGPInstance{Name: "main", LocalASN: 65001, Peers: []tables.BGPPeer{
		{Name: "up", Address: netip.MustParseAddr("198.18.0.1"), ASN: 65000, PeerPort: 179},
		{Name: "down", Address: netip.MustParseAddr("198.18.0.2"), ASN: 65000, PeerPort: 179},
		{Name: "broken", Address: netip.MustParseAddr("198.18.0.3"), ASN: 65000, Error: "auth Secret \"s\" not found"},
	}}
	peers := map[string]*tables.BGPPeerState{
		"main/up":   {Instance: "main", Peer: "up", State: tables.BGPStateEstablished, AppliedHoldTimeSeconds: 9, AppliedKeepaliveSeconds: 3},
		"main/down": {Instance: "main", Peer: "down", State: tables.BGPStateActive, LastError: "failed to connect: i/o timeout"},
	}
	st := nodeStatus([]*tables.BGPInstance{inst, {Name: "bad", Error: "localASN is not set"}}, peers, nil, 1, time.Now())
	if len(st.BGPInstances) != 1 || len(st.BGPInstances[0].PeerStatuses) != 2 {
		t.Fatalf("%+v", st)
	}
	running, _ := findCondition(st.Conditions, tables.ConditionBGPInstancesRunning)
	est, _ := findCondition(st.Conditions, tables.ConditionBGPPeersEstablished)
	if running.Status != metav1.ConditionFalse || !strings.Contains(running.Message, "localASN") {
		t.Errorf("running %+v", running)
	}
	if est.Status != metav1.ConditionFalse || est.Reason != tables.ReasonBGPNotEstablished ||
		!strings.Contains(est.Message, "i/o timeout") || !strings.Contains(est.Message, `auth Secret`) {
		t.Errorf("established %+v", est)
	}
}

// A peer with BFD shows its BFD state; every session established but a
// BFD session not up makes PeersEstablished False with reason BFDNotUp.
func TestNodeStatusBFD(t *testing.T) {
	bfd := &tables.BGPBFD{ReceiveIntervalMs: 100, TransmitIntervalMs: 100, DetectMultiplier: 3}
	inst := &tables.BGPInstance{Name: "main", LocalASN: 65001, Peers: []tables.BGPPeer{
		{Name: "fast", Address: netip.MustParseAddr("198.18.0.1"), ASN: 65000, BFD: bfd},
		{Name: "nobfd", Address: netip.MustParseAddr("198.18.0.2"), ASN: 65000, BFD: bfd},
		{Name: "plain", Address: netip.MustParseAddr("198.18.0.3"), ASN: 65000},
	}}
	for _, c := range []struct {
		name       string
		nobfdState string
		status     metav1.ConditionStatus
		reason     string
	}{
		{"all up", tables.BFDStateUp, metav1.ConditionTrue, tables.ReasonBGPOK},
		{"one down", tables.BFDStateDown, metav1.ConditionFalse, tables.ReasonBFDNotUp},
	} {
		t.Run(c.name, func(t *testing.T) {
			peers := map[string]*tables.BGPPeerState{
				"main/fast":  {State: tables.BGPStateEstablished, BFD: tables.BFDStateUp},
				"main/nobfd": {State: tables.BGPStateEstablished, BFD: c.nobfdState},
				"main/plain": {State: tables.BGPStateEstablished},
			}
			st := nodeStatus([]*tables.BGPInstance{inst}, peers, nil, 1, time.Now())
			ps := st.BGPInstances[0].PeerStatuses
			if *ps[0].BFDState != tables.BFDStateUp || *ps[1].BFDState != c.nobfdState || ps[2].BFDState != nil {
				t.Fatalf("peer statuses %+v", ps)
			}
			est, _ := findCondition(st.Conditions, tables.ConditionBGPPeersEstablished)
			if est.Status != c.status || est.Reason != c.reason || (c.status == metav1.ConditionFalse && !strings.Contains(est.Message, `"nobfd"`)) {
				t.Fatalf("condition %+v", est)
			}
		})
	}
}

// An established IPv4 peer that gets no IPv6 routes for want of a next
// hop makes PeersEstablished False with reason NoIPv6NextHop, naming it;
// a session down still wins the reason.
func TestNodeStatusNoIPv6NextHop(t *testing.T) {
	inst := &tables.BGPInstance{Name: "main", LocalASN: 65001, Peers: []tables.BGPPeer{
		{Name: "tor4", Address: netip.MustParseAddr("198.18.0.1"), ASN: 65000},
		{Name: "other", Address: netip.MustParseAddr("198.18.0.2"), ASN: 65000},
	}}
	noHop := "no IPv6 next hop for its ipv6-unicast routes: eth0, the interface toward 198.18.0.1, has no global IPv6 address"
	for _, c := range []struct {
		name       string
		otherState string
		reason     string
	}{
		{"sessions up", tables.BGPStateEstablished, tables.ReasonBGPNoIPv6NextHop},
		{"a session down too", tables.BGPStateActive, tables.ReasonBGPNotEstablished},
	} {
		t.Run(c.name, func(t *testing.T) {
			peers := map[string]*tables.BGPPeerState{
				"main/tor4":  {State: tables.BGPStateEstablished, NextHopError: noHop},
				"main/other": {State: c.otherState},
			}
			st := nodeStatus([]*tables.BGPInstance{inst}, peers, nil, 1, time.Now())
			est, _ := findCondition(st.Conditions, tables.ConditionBGPPeersEstablished)
			if est.Status != metav1.ConditionFalse || est.Reason != c.reason ||
				!strings.Contains(est.Message, `peer "tor4" (198.18.0.1) of instance "main" gets no IPv6 routes: `+noHop) {
				t.Fatalf("condition %+v", est)
			}
		})
	}
}

// Two cluster configs select node1 and node2: the one a node's config
// names keeps it, the oldest gets a node none names; each config is told
// of the owners of the nodes it does not get, the owner of all is not.
func TestResourceStatusConflicts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old := &tables.BGPClusterConfig{Name: "zz-old", CreationTimestamp: t0}
	young := &tables.BGPClusterConfig{Name: "aa-young", CreationTimestamp: t0.Add(time.Hour)}
	nodes := []*tables.Node{{Name: "node1"}, {Name: "node2"}}
	conflict := func(recorded map[string]string) map[string]string {
		out := map[string]string{}
		for _, row := range resourceStatus([]*tables.BGPClusterConfig{young, old}, nil, nil, nil, nodes, recorded, true) {
			for _, c := range row.Want {
				if c.Type == "cilium.io/ConflictingClusterConfig" && c.True {
					out[row.Name] = c.Message
				}
			}
		}
		return out
	}
	for _, tt := range []struct {
		name     string
		recorded map[string]string
		want     map[string]string
	}{
		{"none named: the oldest gets both", nil,
			map[string]string{"aa-young": "Selecting the same node(s) with ClusterConfig(s): [zz-old]"}},
		{"node1 runs the young one", map[string]string{"node1": "aa-young", "node2": "zz-old"}, map[string]string{
			"aa-young": "Selecting the same node(s) with ClusterConfig(s): [zz-old]",
			"zz-old":   "Selecting the same node(s) with ClusterConfig(s): [aa-young]"}},
		{"both run the young one", map[string]string{"node1": "aa-young", "node2": "aa-young"},
			map[string]string{"zz-old": "Selecting the same node(s) with ClusterConfig(s): [aa-young]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := conflict(tt.recorded); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("conflicts %v, want %v", got, tt.want)
			}
		})
	}
}

// With enable-bgp-control-plane-status-report off no condition is wanted:
// the writer removes Herald's (applyConditions), as Cilium's operator.
func TestResourceStatusNotReported(t *testing.T) {
	rows := resourceStatus([]*tables.BGPClusterConfig{{Name: "cc"}}, []*tables.BGPPeerConfig{{Name: "pc", AuthSecret: "gone"}},
		[]*tables.BGPAdvertisement{{Name: "adv"}}, nil, nil, nil, false)
	if len(rows) != 3 {
		t.Fatalf("rows %+v, want one per resource", rows)
	}
	for _, r := range rows {
		if len(r.Want) != 0 {
			t.Errorf("%s: wants %+v, want none", r.Key(), r.Want)
		}
	}
}
