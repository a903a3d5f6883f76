package cmd

import (
	"strings"
	"testing"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
)

// TestConfig: herald-dbg config prints the agent's effective options by
// their CamelCase names (by flag name with --flag-names), and takes
// cilium-dbg's --all, so that the spec's troubleshooting command line
// `config --all | grep EnableL2Announcements` runs as written.
func TestConfig(t *testing.T) {
	eff := &agentconfig.Effective{}
	eff.Set(map[string]string{"enable-l2-announcements": "true", "k8s-client-qps": "100"})
	serveShell(t, statedb.New(), cell.Provide(func() *agentconfig.Effective { return eff }))

	for _, args := range [][]string{{"config"}, {"config", "--all"}, {"config", "-a"}} {
		out := runDbg(t, args...)
		for _, want := range []string{"EnableL2Announcements : true", "K8sClientQPS          : 100"} {
			if !strings.Contains(out, want) {
				t.Errorf("herald-dbg %s: no line %q in:\n%s", strings.Join(args, " "), want, out)
			}
		}
	}
	if out := runDbg(t, "config", "--flag-names"); !strings.Contains(out, "enable-l2-announcements : true") {
		t.Errorf("herald-dbg config --flag-names: no line for enable-l2-announcements in:\n%s", out)
	}
	if err := dbg(t, "config", "--no-such-flag"); err == nil {
		t.Error("herald-dbg config --no-such-flag: no error")
	}
}

// TestAgentNode: the chart leaves node-name empty and sets $NODE_NAME, so
// explain named "this node ()" until herald-dbg resolved the node as the
// agent does; an explicit node-name wins.
func TestAgentNode(t *testing.T) {
	t.Setenv("NODE_NAME", "node1")
	if got := agentNode(map[string]string{"node-name": ""}); got != "node1" {
		t.Errorf("node-name empty, NODE_NAME node1: got %q", got)
	}
	if got := agentNode(map[string]string{"node-name": "node2"}); got != "node2" {
		t.Errorf("node-name node2: got %q", got)
	}
}
