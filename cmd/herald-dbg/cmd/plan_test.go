package cmd

import (
	"strings"
	"testing"
)

// TestReadPoolsStdin: "-" reads the pools from stdin, as migrate's -f does,
// since the file a user edits is not inside the agent's Pod.
func TestReadPoolsStdin(t *testing.T) {
	const pool = `apiVersion: cilium.io/v2alpha1
kind: CiliumLoadBalancerIPPool
metadata: {name: lan}
spec:
  blocks: [{start: 198.18.16.210, stop: 198.18.16.220}]
`
	pools, err := readPools("-", strings.NewReader(pool))
	if err != nil {
		t.Fatal(err)
	}
	if len(pools) != 1 || pools[0].Name != "lan" {
		t.Fatalf("got %d pools (%v), want pool lan", len(pools), pools)
	}
}
