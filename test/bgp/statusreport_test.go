package bgp

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// enable-bgp-control-plane-status-report=false, as in Cilium: the agents
// clear their CiliumBGPNodeConfig's status (the spec stays) and remove
// Herald's conditions from the cluster config, while the sessions run on.
// (The agents are restarted with the option on when the test ends.)
func TestStatusReportOff(t *testing.T) {
	ensureAgents(t)
	for _, n := range nodes {
		waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "2 of 2 sessions established")
	}
	waitClusterConfigCondition(t, clusterConfigName, v2alpha1.BGPClusterConfigConditionNoMatchingNode, metav1.ConditionFalse,
		"NoMatchingNode", "No node matches spec.nodeSelector")
	restartAgentsWith(t, "--enable-bgp-control-plane-status-report=false")

	c := herald.CiliumV2alpha1()
	for _, n := range nodes {
		waitFor(t, n.Name+"'s CiliumBGPNodeConfig without status, with its spec", func() (bool, string) {
			nc, err := c.CiliumBGPNodeConfigs().Get(ctxT(t), n.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(nc.Status.BGPInstances) == 0 && len(nc.Status.Conditions) == 0 && len(nc.Spec.BGPInstances) == 1,
				fmt.Sprintf("spec %+v status %+v", nc.Spec, nc.Status)
		})
	}
	waitFor(t, clusterConfigName+" without Herald's conditions", func() (bool, string) {
		cc, err := c.CiliumBGPClusterConfigs().Get(ctxT(t), clusterConfigName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(cc.Status.Conditions) == 0, fmt.Sprintf("%+v", cc.Status.Conditions)
	})
	// The sessions are not the status: they stay up.
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.host.IP.String(), n.host.IP6.String())
	}
	if _, err := router.WaitEstablished(ctxT(t), addrs...); err != nil {
		t.Fatal(err)
	}
}
