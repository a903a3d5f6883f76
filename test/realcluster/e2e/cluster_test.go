package e2e

import (
	"fmt"
	"testing"
)

// TestRealCluster runs the suite's checks in order on the one cluster:
// the quiet ones first, then those that delete, kill, stop and freeze,
// then upgrades and reinstalls. `-run 'TestRealCluster/<name>'` runs one
// (with the fixtures before it).
func TestRealCluster(t *testing.T) {
	dumpOnFailure(t)
	applyYAML(t, fmt.Sprintf(lanFixtures, lanPoolStart, lanPoolStop))
	for _, step := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"AgentsRunningAndReady", testAgentsRunningAndReady},
		{"LoadBalancerTraffic", testLoadBalancerTraffic},
		{"PodsFromPools", testPodsFromPools},
		{"DebugWhereItRuns", testDebugWhereItRuns},
		{"BGP", testBGP},
		{"HostBindsLoopbackOnly", testHostBindsLoopbackOnly},
		{"AgentRestartKeepsPodAddresses", testAgentRestartKeepsPodAddresses},
		{"Churn", testChurn},
		{"L2Failover", testL2Failover},
		{"NotReadyNodeKeepsAnnouncing", testNotReadyNodeKeepsAnnouncing},
		{"FrozenAgent", testFrozenAgent},
		{"KubeletAndRuntimeRestart", testKubeletAndRuntimeRestart},
		{"NodeDeletedAndBack", testNodeDeletedAndBack},
		{"Upgrades", testUpgrades},
		{"TakeoverFromMetalLB", testTakeoverFromMetalLB},
	} {
		if !t.Run(step.name, step.run) {
			return
		}
	}
}

// The LoadBalancer pool on the LAN and the L2 announcement policy every
// Service of the suite is announced by.
const (
	lanPoolStart = "198.18.16.200"
	lanPoolStop  = "198.18.16.239"
	lanFixtures  = `
apiVersion: cilium.io/v2alpha1
kind: CiliumLoadBalancerIPPool
metadata: {name: lan}
spec:
  blocks: [{start: %s, stop: %s}]
  # Services routed by BGP take their IPs from a pool of their own.
  serviceSelector:
    matchExpressions: [{key: bgp, operator: DoesNotExist}]
---
apiVersion: cilium.io/v2alpha1
kind: CiliumL2AnnouncementPolicy
metadata: {name: lan}
spec:
  loadBalancerIPs: true
  interfaces: [eth0]
`
)
