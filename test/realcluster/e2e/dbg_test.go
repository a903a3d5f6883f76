package e2e

import (
	"context"
	"strings"
	"testing"
)

// testDebugWhereItRuns: the documented herald-dbg commands, run as the
// documentation runs them (kubectl -n kube-system exec ds/herald -- ...),
// answer from the agent: its tables, why a Service has its IP, which node
// answers for it, and a clean IPAM check on every node.
func testDebugWhereItRuns(t *testing.T) {
	ns := newNamespace(t, "dbg", nil)
	deployBackend(t, ns, "dbg", 1, nil)
	_, vip := loadBalancer(t, ns, "dbg", nil)
	ctx := context.Background()
	exec := func(args ...string) string {
		t.Helper()
		out, err := cl.RunKubectl(ctx, append([]string{"-n", heraldNS, "exec", "ds/herald", "-c", "agent", "--", "herald-dbg"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"statedb", "services"}, []string{ns + "/dbg", vip.String()}},
		{[]string{"statedb", "pod-ip-pools"}, []string{"default", "198.18.24.0/21"}},
		{[]string{"statedb", "l2-owners"}, []string{vip.String()}},
		{[]string{"explain", "service", ns + "/dbg"}, []string{vip.String(), "lan"}},
	} {
		out := exec(c.args...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("herald-dbg %s: no %q in\n%s", strings.Join(c.args, " "), w, out)
			}
		}
	}
	for _, n := range cl.Nodes {
		rep := ipamCheck(t, n.Name)
		if rep.Errors != 0 || rep.Pods == 0 {
			t.Errorf("herald-dbg ipam check on %s: %d errors, %d pods looked at: %+v", n.Name, rep.Errors, rep.Pods, rep.Findings)
		}
	}
}
