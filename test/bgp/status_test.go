package bgp

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// condition returns a condition of a list, if present.
func condition(cs []metav1.Condition, typ string) (metav1.Condition, bool) {
	for _, c := range cs {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// waitNodeCondition waits for a condition of a node's CiliumBGPNodeConfig.
func waitNodeCondition(t *testing.T, n *node, typ string, status metav1.ConditionStatus, msgContains string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("CiliumBGPNodeConfig %s condition %s=%s (%q)", n.Name, typ, status, msgContains), func() (bool, string) {
		nc, err := herald.CiliumV2alpha1().CiliumBGPNodeConfigs().Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c, ok := condition(nc.Status.Conditions, typ)
		return ok && c.Status == status && strings.Contains(c.Message, msgContains), fmt.Sprintf("%+v", nc.Status.Conditions)
	})
}

// Every agent keeps a CiliumBGPNodeConfig named after its node: its
// instance and peers, each session established, routes counted.
func TestNodeConfigStatus(t *testing.T) {
	ensureAgents(t)
	for _, n := range nodes {
		waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "2 of 2 sessions established")
		nc, err := herald.CiliumV2alpha1().CiliumBGPNodeConfigs().Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(nc.Spec.BGPInstances) != 1 || nc.Spec.BGPInstances[0].Name != "main" || len(nc.Spec.BGPInstances[0].Peers) != 2 ||
			ptr.Deref(nc.Spec.BGPInstances[0].RouterID, "") != n.host.IP.String() {
			t.Errorf("%s spec %+v", n.Name, nc.Spec)
		}
		if len(nc.Status.BGPInstances) != 1 || len(nc.Status.BGPInstances[0].PeerStatuses) != 2 {
			t.Fatalf("%s status %+v", n.Name, nc.Status)
		}
		// Owned by its Node: Kubernetes' garbage collector deletes it
		// with the Node, whose agent is gone by then.
		kn, err := kube.CoreV1().Nodes().Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if o := nc.OwnerReferences; len(o) != 1 || o[0].Kind != "Node" || o[0].Name != n.Name || o[0].UID != kn.UID {
			t.Errorf("%s owner references %+v, want the Node %s (uid %s)", n.Name, o, n.Name, kn.UID)
		}
		for _, ps := range nc.Status.BGPInstances[0].PeerStatuses {
			if ptr.Deref(ps.PeeringState, "") != tables.BGPStateEstablished || ps.EstablishedTime == nil || ps.Timers == nil ||
				ptr.Deref(ps.Timers.AppliedHoldTimeSeconds, 0) != 9 {
				t.Errorf("%s peer %s: %+v", n.Name, ps.Name, ps)
			}
		}
	}
}

// A CiliumBGPNodeConfig someone else deletes or edits is put back as the
// agent knows it, without waiting for a session to change.
func TestNodeConfigPutBack(t *testing.T) {
	ensureAgents(t)
	n := nodes[0]
	api := herald.CiliumV2alpha1().CiliumBGPNodeConfigs()
	waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "2 of 2 sessions established")
	before, err := api.Get(ctxT(t), n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Delete(ctxT(t), n.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "CiliumBGPNodeConfig "+n.Name+" created again", func() (bool, string) {
		nc, err := api.Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nc.UID != before.UID && len(nc.Spec.BGPInstances) == 1 && len(nc.Status.BGPInstances) == 1, fmt.Sprintf("uid %s, %+v", nc.UID, nc.Spec)
	})
	waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "2 of 2 sessions established")

	edited, err := api.Get(ctxT(t), n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edited.Spec.BGPInstances[0].Name = "edited-by-hand"
	if _, err := api.Update(ctxT(t), edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "CiliumBGPNodeConfig "+n.Name+" spec put back", func() (bool, string) {
		nc, err := api.Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(nc.Spec.BGPInstances) == 1 && nc.Spec.BGPInstances[0].Name == "main", fmt.Sprintf("%+v", nc.Spec)
	})
}

// Bad input gets a condition on the resource that has it, and leaves
// every other session and route alone.
func TestBadInput(t *testing.T) {
	ensureAgents(t)
	_, p := advertisedService(t, "web")

	c := herald.CiliumV2alpha1()
	bad := &v2alpha1.CiliumBGPClusterConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "hbgp-bad"},
		Spec: v2alpha1.CiliumBGPClusterConfigSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{bgpNodeLabel: "nowhere"}},
			BGPInstances: []v2alpha1.CiliumBGPInstance{{Name: "x", LocalASN: ptr.To[int64](65009),
				Peers: []v2alpha1.CiliumBGPPeer{{Name: "p", PeerAddress: ptr.To("198.18.44.99"), PeerASN: ptr.To[int64](65000),
					PeerConfigRef: &v2alpha1.PeerConfigReference{Name: "hbgp-nope"}}}}},
		},
	}
	if _, err := c.CiliumBGPClusterConfigs().Create(ctxT(t), bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CiliumBGPClusterConfigs().Delete(ctxT(t), bad.Name, metav1.DeleteOptions{}) })
	badAdv := &v2alpha1.CiliumBGPAdvertisement{
		ObjectMeta: metav1.ObjectMeta{Name: "hbgp-bad-adv", Labels: map[string]string{advertLabel: "lb"}},
		Spec: v2alpha1.CiliumBGPAdvertisementSpec{Advertisements: []v2alpha1.BGPAdvertisement{{
			AdvertisementType: v2alpha1.BGPServiceAdvert,
			Service:           &v2alpha1.BGPServiceOptions{Addresses: []v2alpha1.BGPServiceAddressType{v2alpha1.BGPLoadBalancerIPAddr}},
			Selector:          &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}}},
		}}},
	}
	if _, err := c.CiliumBGPAdvertisements().Create(ctxT(t), badAdv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CiliumBGPAdvertisements().Delete(ctxT(t), badAdv.Name, metav1.DeleteOptions{}) })

	waitFor(t, "conditions on hbgp-bad", func() (bool, string) {
		got, err := c.CiliumBGPClusterConfigs().Get(ctxT(t), bad.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		noNode, ok1 := condition(got.Status.Conditions, v2alpha1.BGPClusterConfigConditionNoMatchingNode)
		missing, ok2 := condition(got.Status.Conditions, v2alpha1.BGPClusterConfigConditionMissingPeerConfigs)
		return ok1 && ok2 && noNode.Status == metav1.ConditionTrue && noNode.Reason == "NoMatchingNode" &&
			missing.Status == metav1.ConditionTrue && missing.Reason == "MissingPeerConfigs" &&
			missing.Message == "Referenced CiliumBGPPeerConfig(s) are missing: [hbgp-nope]", fmt.Sprintf("%+v", got.Status.Conditions)
	})
	waitFor(t, "InvalidSpec on hbgp-bad-adv", func() (bool, string) {
		got, err := c.CiliumBGPAdvertisements().Get(ctxT(t), badAdv.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond, ok := condition(got.Status.Conditions, tables.ConditionBGPInvalidSpec)
		return ok && cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, "advertisements[0].selector"), fmt.Sprintf("%+v", got.Status.Conditions)
	})
	// The shared config has none of these problems: each condition is
	// there, False, as Cilium keeps them.
	got, err := c.CiliumBGPClusterConfigs().Get(ctxT(t), clusterConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range tables.BGPManagedConditions(v2alpha1.BGPClusterConfigKind) {
		if cond, ok := condition(got.Status.Conditions, typ); !ok || cond.Status != metav1.ConditionFalse {
			t.Errorf("%s: condition %s %+v (present: %v), want False", clusterConfigName, typ, cond, ok)
		}
	}
	// Everything else as it was.
	waitAdvertisedBy(t, p, nodes...)
	for _, n := range nodes {
		waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "2 of 2")
	}
}

// TCP-MD5: node3 moved to a cluster config whose peer config takes its
// password from a Secret. First the Secret is missing (condition on the
// peer config, the peer not configured), then its password is wrong (the
// router drops the segments: the session never comes up, the node's
// condition says so), then right (established, routes back).
func TestMD5(t *testing.T) {
	ensureAgents(t)
	_, p := advertisedService(t, "web")
	n3 := nodes[2]
	c := herald.CiliumV2alpha1()

	if err := router.Configure("router bgp 65000", fmt.Sprintf("neighbor %s password hbgp-right", n3.host.IP)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = router.Configure("router bgp 65000", fmt.Sprintf("no neighbor %s password", n3.host.IP)) })
	pc := peerConfig("hbgp-md5", "ipv4", "hbgp-md5")
	if _, err := c.CiliumBGPPeerConfigs().Create(ctxT(t), pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CiliumBGPPeerConfigs().Delete(ctxT(t), pc.Name, metav1.DeleteOptions{}) })
	cc := &v2alpha1.CiliumBGPClusterConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "hbgp-md5"},
		Spec: v2alpha1.CiliumBGPClusterConfigSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{bgpNodeLabel: "md5"}},
			BGPInstances: []v2alpha1.CiliumBGPInstance{{Name: "main", LocalASN: ptr.To[int64](nodeASN),
				Peers: []v2alpha1.CiliumBGPPeer{{Name: "tor4", PeerAddress: ptr.To(routerHost.IP.String()), PeerASN: ptr.To[int64](routerASN),
					PeerConfigRef: &v2alpha1.PeerConfigReference{Name: pc.Name}}}}},
		},
	}
	if _, err := c.CiliumBGPClusterConfigs().Create(ctxT(t), cc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CiliumBGPClusterConfigs().Delete(ctxT(t), cc.Name, metav1.DeleteOptions{}) })
	setNodeLabel(t, n3, bgpNodeLabel, "md5")
	t.Cleanup(func() { setNodeLabel(t, n3, bgpNodeLabel, "main") })

	// No Secret yet.
	waitFor(t, "MissingAuthSecret on hbgp-md5", func() (bool, string) {
		got, err := c.CiliumBGPPeerConfigs().Get(ctxT(t), pc.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond, ok := condition(got.Status.Conditions, v2alpha1.BGPPeerConfigConditionMissingAuthSecret)
		return ok && cond.Status == metav1.ConditionTrue, fmt.Sprintf("%+v", got.Status.Conditions)
	})
	waitNodeCondition(t, n3, tables.ConditionBGPPeersEstablished, metav1.ConditionFalse, "not found")
	waitAdvertisedBy(t, p, nodes[0], nodes[1])

	// The wrong password.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretsNS, Name: "hbgp-md5"}, StringData: map[string]string{"password": "hbgp-wrong"}}
	if _, err := kube.CoreV1().Secrets(secretsNS).Create(ctxT(t), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Secrets(secretsNS).Delete(ctxT(t), secret.Name, metav1.DeleteOptions{}) })
	waitFor(t, "MissingAuthSecret False", func() (bool, string) {
		got, err := c.CiliumBGPPeerConfigs().Get(ctxT(t), pc.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond, ok := condition(got.Status.Conditions, v2alpha1.BGPPeerConfigConditionMissingAuthSecret)
		return ok && cond.Status == metav1.ConditionFalse, fmt.Sprintf("%+v", got.Status.Conditions)
	})
	waitNodeCondition(t, n3, tables.ConditionBGPPeersEstablished, metav1.ConditionFalse, "password")
	if nbrs, err := router.Neighbors(); err != nil {
		t.Fatal(err)
	} else if s := nbrs[n3.host.IP.String()].State; s == "Established" {
		t.Fatalf("the session with the wrong password is %s", s)
	}
	waitAdvertisedBy(t, p, nodes[0], nodes[1])

	// The right one.
	secret.StringData["password"] = "hbgp-right"
	if _, err := kube.CoreV1().Secrets(secretsNS).Update(ctxT(t), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNodeCondition(t, n3, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "1 of 1")
	waitAdvertisedBy(t, p, nodes...)
}

func setNodeLabel(t *testing.T, n *node, key, value string) {
	t.Helper()
	waitFor(t, "labelling "+n.Name, func() (bool, string) {
		obj, err := kube.CoreV1().Nodes().Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		obj.Labels[key] = value
		_, err = kube.CoreV1().Nodes().Update(ctxT(t), obj, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// A node's CiliumBGPNodeConfigOverride sets its instance's AS number
// (localASN, Cilium's cilium.io/v2 field): the node's status names the
// new AS, the router, which expects the cluster's AS from that node,
// refuses its OPEN, and without the override the session comes back.
func TestLocalASNOverride(t *testing.T) {
	ensureAgents(t)
	n := nodes[2]
	waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "2 of 2 sessions established")
	ov := &v2alpha1.CiliumBGPNodeConfigOverride{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name},
		Spec: v2alpha1.CiliumBGPNodeConfigOverrideSpec{BGPInstances: []v2alpha1.CiliumBGPNodeConfigInstanceOverride{
			{Name: "main", LocalASN: ptr.To[int64](65099)},
		}},
	}
	api := herald.CiliumV2alpha1().CiliumBGPNodeConfigOverrides()
	if _, err := api.Create(ctxT(t), ov, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = api.Delete(ctxT(t), ov.Name, metav1.DeleteOptions{})
		}
	})

	waitFor(t, n.Name+"'s status with AS 65099", func() (bool, string) {
		nc, err := herald.CiliumV2alpha1().CiliumBGPNodeConfigs().Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(nc.Status.BGPInstances) == 1 && ptr.Deref(nc.Status.BGPInstances[0].LocalASN, 0) == 65099, fmt.Sprintf("%+v", nc.Status.BGPInstances)
	})
	// The router expects AS 65001 from every node: it refuses the OPEN
	// (its log says "BGP OPEN receipt failed"), and nothing comes up.
	waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionFalse, "")
	waitFor(t, "the router without a session to "+n.Name, func() (bool, string) {
		nbrs, err := router.Neighbors()
		if err != nil {
			return false, err.Error()
		}
		nb := nbrs[n.host.IP.String()]
		return nb.State != "" && nb.State != "Established", fmt.Sprintf("%+v", nb)
	})

	if err := api.Delete(ctxT(t), ov.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted = true
	waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "2 of 2 sessions established")
}
