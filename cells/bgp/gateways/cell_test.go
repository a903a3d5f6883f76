package gateways

import (
	"testing"

	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/tables"
)

// The cell reads bgp-cluster-configs: it asks for them itself, while BGP
// is on, rather than count on another cell of the feature asking.
func TestReflections(t *testing.T) {
	on := reflections(bgpconfig.Config{EnableBGPControlPlane: true}).Reflections
	if len(on) != 1 || on[0] != (tables.Reflection{Table: tables.BGPClusterConfigsTableName}) {
		t.Errorf("BGP on: %v, want the cluster configs", on)
	}
	if off := reflections(bgpconfig.Config{}).Reflections; len(off) != 0 {
		t.Errorf("BGP off: %v, want nothing", off)
	}
}
