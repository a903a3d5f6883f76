package bgp

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// A second cluster config selects the nodes of the shared one, with an
// instance of the same name ("main", as Cilium's examples name theirs)
// and a name that sorts first: the nodes keep the shared config, which
// they run already, with its sessions; each node's CiliumBGPNodeConfig
// holds its instance once (the API server refuses "main" twice) and says
// which config holds it; only the second config is told of the conflict,
// in Cilium's words. node3, moved to the second config alone and then
// selected by both again, stays with the second (the one it runs),
// though the shared one is older: now the shared one is told. Once the
// second is gone, no node is marked contested.
func TestConflictingClusterConfigs(t *testing.T) {
	ensureAgents(t)
	for _, n := range nodes {
		waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "2 of 2 sessions established")
	}
	c := herald.CiliumV2alpha1()
	second := &v2alpha1.CiliumBGPClusterConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "aaa-hbgp-second"},
		Spec: v2alpha1.CiliumBGPClusterConfigSpec{
			NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: bgpNodeLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"main", "second"}}}},
			BGPInstances: []v2alpha1.CiliumBGPInstance{{Name: "main", LocalASN: ptr.To[int64](nodeASN),
				Peers: []v2alpha1.CiliumBGPPeer{{Name: "elsewhere", PeerAddress: ptr.To("198.18.44.99"), PeerASN: ptr.To[int64](routerASN),
					PeerConfigRef: &v2alpha1.PeerConfigReference{Name: peerConfigV4}}}}},
		},
	}
	if _, err := c.CiliumBGPClusterConfigs().Create(ctxT(t), second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = c.CiliumBGPClusterConfigs().Delete(ctxT(t), second.Name, metav1.DeleteOptions{})
		}
	})
	conflictWith := func(owner string) string { return "Selecting the same node(s) with ClusterConfig(s): [" + owner + "]" }
	const conflicting = v2alpha1.BGPClusterConfigConditionConflictingClusterConfigs

	waitClusterConfigCondition(t, second.Name, conflicting, metav1.ConditionTrue, "ConflictingClusterConfigs", conflictWith(clusterConfigName))
	for _, n := range nodes {
		waitNodeConfigHeldBy(t, n, clusterConfigName, "tor4", true)
		waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "2 of 2 sessions established")
	}
	waitClusterConfigCondition(t, clusterConfigName, conflicting, metav1.ConditionFalse, "ConflictingClusterConfigs", "")

	n3 := nodes[2]
	setNodeLabel(t, n3, bgpNodeLabel, "second")
	t.Cleanup(func() { setNodeLabel(t, n3, bgpNodeLabel, "main") })
	waitNodeConfigHeldBy(t, n3, second.Name, "elsewhere", false)
	setNodeLabel(t, n3, bgpNodeLabel, "main")
	waitClusterConfigCondition(t, clusterConfigName, conflicting, metav1.ConditionTrue, "ConflictingClusterConfigs", conflictWith(second.Name))
	waitNodeConfigHeldBy(t, n3, second.Name, "elsewhere", true)
	waitClusterConfigCondition(t, second.Name, conflicting, metav1.ConditionTrue, "ConflictingClusterConfigs", conflictWith(clusterConfigName))

	if err := c.CiliumBGPClusterConfigs().Delete(ctxT(t), second.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted = true
	for _, n := range nodes {
		waitNodeConfigHeldBy(t, n, clusterConfigName, "tor4", false)
	}
	waitClusterConfigCondition(t, clusterConfigName, conflicting, metav1.ConditionFalse, "ConflictingClusterConfigs", "")
}

// waitNodeConfigHeldBy waits for a node's CiliumBGPNodeConfig to hold the
// one instance "main" of the cluster config, whose first peer is
// firstPeer, to name that config, and to be labelled contested or not.
func waitNodeConfigHeldBy(t *testing.T, n *node, clusterConfig, firstPeer string, contested bool) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s's CiliumBGPNodeConfig held by %s (contested %v)", n.Name, clusterConfig, contested), func() (bool, string) {
		nc, err := herald.CiliumV2alpha1().CiliumBGPNodeConfigs().Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		spec := nc.Spec.BGPInstances
		_, isContested := nc.Labels[tables.BGPContestedLabel]
		ok := len(spec) == 1 && spec[0].Name == "main" && len(spec[0].Peers) > 0 && spec[0].Peers[0].Name == firstPeer &&
			nc.Annotations[tables.BGPClusterConfigAnnotation] == clusterConfig && isContested == contested
		return ok, fmt.Sprintf("annotations %v labels %v spec %+v", nc.Annotations, nc.Labels, spec)
	})
}

// waitClusterConfigCondition waits for a condition of a cluster config,
// with its reason and exact message.
func waitClusterConfigCondition(t *testing.T, name, typ string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("CiliumBGPClusterConfig %s condition %s=%s (%s: %q)", name, typ, status, reason, message), func() (bool, string) {
		cc, err := herald.CiliumV2alpha1().CiliumBGPClusterConfigs().Get(ctxT(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond, ok := condition(cc.Status.Conditions, typ)
		return ok && cond.Status == status && cond.Reason == reason && cond.Message == message, fmt.Sprintf("%+v", cc.Status.Conditions)
	})
}
