package cnitest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/cnitest"
)

// TestVersionsAgree: ensure-cni-plugins.sh builds the version the tools
// module requires and this package looks for PluginsVersion; the tools
// module and Herald's go.mod use the same CNI library, so that the plugins
// and herald-ipam speak the same spec.
func TestVersionsAgree(t *testing.T) {
	root := cluster.RepoRoot()
	require := func(gomod, module string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, gomod))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(module) + `\s+(v\S+)`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s does not require %s", gomod, module)
		}
		return string(m[1])
	}
	const tools = "install/dev/tools-cni/go.mod"
	if v := require(tools, "github.com/containernetworking/plugins"); v != cnitest.PluginsVersion {
		t.Errorf("%s requires plugins %s, cnitest.PluginsVersion is %s", tools, v, cnitest.PluginsVersion)
	}
	if a, b := require(tools, "github.com/containernetworking/cni"), require("go.mod", "github.com/containernetworking/cni"); a != b {
		t.Errorf("the CNI plugins are built with github.com/containernetworking/cni %s, herald-ipam with %s", a, b)
	}
}
