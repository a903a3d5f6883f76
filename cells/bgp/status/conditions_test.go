package status

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

func TestClusterConfigProblems(t *testing.T) {
	rack := func(r string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"rack": r}}
	}
	a := &tables.BGPClusterConfig{Name: "a", NodeSelector: rack("1"), Instances: []tables.BGPInstanceSpec{{Name: "i",
		Peers: []tables.BGPPeerSpec{{Name: "p", PeerConfig: "missing"}, {Name: "q", PeerConfig: "there"}, {Name: "r", AddressError: `"x" is not an IP address`}}}}}
	b := &tables.BGPClusterConfig{Name: "b"} // every node
	c := &tables.BGPClusterConfig{Name: "c", NodeSelector: rack("9")}
	nodes := []*tables.Node{{Name: "n1", Labels: map[string]string{"rack": "1"}}}
	pcs := map[string]*tables.BGPPeerConfig{"there": {Name: "there"}}
	all := []*tables.BGPClusterConfig{a, b, c}

	byType := func(ps []problem) map[string]string {
		m := map[string]string{}
		for _, p := range ps {
			m[p.typ] = p.message
		}
		return m
	}
	pa := byType(clusterConfigProblems(a, all, nodes, pcs))
	if !strings.Contains(pa[v2alpha1.BGPClusterConfigConditionMissingPeerConfigs], "missing") || strings.Contains(pa[v2alpha1.BGPClusterConfigConditionMissingPeerConfigs], "there") {
		t.Errorf("missing: %q", pa[v2alpha1.BGPClusterConfigConditionMissingPeerConfigs])
	}
	if !strings.Contains(pa[v2alpha1.BGPClusterConfigConditionConflictingClusterConfigs], "b (node n1)") {
		t.Errorf("conflict: %q", pa[v2alpha1.BGPClusterConfigConditionConflictingClusterConfigs])
	}
	if pa[v2alpha1.BGPClusterConfigConditionNoMatchingNode] != "" || !strings.Contains(pa[tables.ConditionBGPInvalidSpec], `peer "r"`) {
		t.Errorf("a: %v", pa)
	}
	pc := byType(clusterConfigProblems(c, all, nodes, pcs))
	if pc[v2alpha1.BGPClusterConfigConditionNoMatchingNode] == "" || pc[v2alpha1.BGPClusterConfigConditionConflictingClusterConfigs] != "" {
		t.Errorf("c: %v", pc)
	}
}

func TestApplyProblems(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// A problem that never existed is not added.
	conds, changed := applyProblems(nil, []problem{{typ: "x/A"}}, 1, t0)
	if len(conds) != 0 || changed {
		t.Fatalf("%v %v", conds, changed)
	}
	// It appears True; other conditions are kept.
	other := metav1.Condition{Type: "other/B", Status: metav1.ConditionTrue}
	conds, changed = applyProblems([]metav1.Condition{other}, []problem{{typ: "x/A", message: "broken"}}, 1, t0)
	if !changed || len(conds) != 2 || conds[0].Status != metav1.ConditionTrue || conds[0].Message != "broken" || conds[1] != other {
		t.Fatalf("%+v", conds)
	}
	// Unchanged: no write, the transition time stays.
	again, changed := applyProblems(conds, []problem{{typ: "x/A", message: "broken"}}, 1, t0.Add(time.Hour))
	if changed || !again[0].LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("%+v %v", again, changed)
	}
	// Fixed: False.
	fixed, changed := applyProblems(conds, []problem{{typ: "x/A"}}, 2, t0.Add(time.Hour))
	if !changed || fixed[0].Status != metav1.ConditionFalse || fixed[0].ObservedGeneration != 2 {
		t.Fatalf("%+v", fixed)
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
