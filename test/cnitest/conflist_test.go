package cnitest_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/libcni"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/cmd/herald-ipam/plugin"
	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/cnitest"
)

// TestShippedConflist: install/cni/10-herald.conflist, the network users
// add, is a bridge network that libcni loads and whose ipam section
// herald-ipam accepts with its defaults, and it has the shape of
// cnitest.BridgeNetwork that test/multipool runs with the real agent:
// "isGateway": false, because the agent puts the gateways of the node's pod
// CIDRs (several) on the bridge, and the bridge plugin allows only one IPv4
// gateway per bridge. Its CNI version is 1.0.0, the newest the CNI library
// of containerd 1.6 and 1.7 knows (test/realcluster runs it under
// containerd 1.6).
func TestShippedConflist(t *testing.T) {
	list, err := libcni.ConfListFromFile(filepath.Join(cluster.RepoRoot(), "install", "cni", "10-herald.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	if list.CNIVersion != "1.0.0" || len(list.Plugins) != 1 || list.Plugins[0].Network.Type != "bridge" || list.Plugins[0].Network.IPAM.Type != "herald-ipam" {
		t.Fatalf("%s: want one bridge plugin with herald-ipam, CNI 1.0.0", list.Bytes)
	}
	// What bridge passes on to herald-ipam: its own configuration with the
	// list's name and version.
	conf, err := libcni.InjectConf(list.Plugins[0], map[string]any{"name": list.Name, "cniVersion": list.CNIVersion})
	if err != nil {
		t.Fatal(err)
	}
	c, err := plugin.ParseConfig(conf.Bytes)
	if err != nil {
		t.Fatalf("herald-ipam refuses the shipped configuration: %v", err)
	}
	if c.IPAM.Socket != v1.DefaultSocket || c.IPAM.StateDir != v1.DefaultStateDir || c.Routes != nil {
		t.Errorf("shipped ipam section %+v: want the defaults and the agent's routes", c.IPAM)
	}

	var shipped, ours map[string]any
	if err := json.Unmarshal(list.Bytes, &shipped); err != nil {
		t.Fatal(err)
	}
	b, err := cnitest.BridgeNetwork{Name: "herald", Bridge: "cni0", IsGateway: false}.Conflist()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ours); err != nil {
		t.Fatal(err)
	}
	// hairpinMode is the only key the tests leave out (no Service VIPs);
	// they run CNI 1.1.0, for GC and STATUS too.
	delete(shipped["plugins"].([]any)[0].(map[string]any), "hairpinMode")
	delete(shipped, "cniVersion")
	delete(ours, "cniVersion")
	if s, o := mustJSON(t, shipped), mustJSON(t, ours); s != o {
		t.Errorf("shipped conflist\n%s\ndiffers from what test/multipool runs\n%s", s, o)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
