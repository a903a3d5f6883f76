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
	// Without -c: the chart names the agent the default container, so
	// kubectl says nothing about the install-cni init container.
	exec := func(stdin string, args ...string) string {
		t.Helper()
		out, err := cl.RunKubectlStdin(ctx, stdin, append([]string{"-n", heraldNS, "exec", "-i", "ds/herald", "--", "herald-dbg"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "Defaulted container") {
			t.Errorf("kubectl exec ds/herald -- herald-dbg %s: kubectl chose a container:\n%s", strings.Join(args, " "), out)
		}
		return string(out)
	}
	// troubleshooting.md: a pool file planned from stdin, a block off the
	// Service's IP: the Service would move to the new block.
	plan := "apiVersion: cilium.io/v2alpha1\nkind: CiliumLoadBalancerIPPool\nmetadata: {name: lan}\n" +
		"spec: {blocks: [{cidr: 198.18.17.0/30}]}\n"
	for _, c := range []struct {
		stdin string
		args  []string
		want  []string
	}{
		{"", []string{"statedb", "services"}, []string{ns + "/dbg", vip.String()}},
		{"", []string{"statedb", "pod-ip-pools"}, []string{"default", "198.18.24.0/21"}},
		{"", []string{"statedb", "l2-owners"}, []string{vip.String()}},
		{"", []string{"explain", "service", ns + "/dbg"}, []string{vip.String(), "lan"}},
		{plan, []string{"pools", "plan", "-f", "-"}, []string{ns + "/dbg", "move", "198.18.17.0"}},
	} {
		out := exec(c.stdin, c.args...)
		if strings.Contains(out, "node ()") {
			t.Errorf("herald-dbg %s: a node without its name in\n%s", strings.Join(c.args, " "), out)
		}
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
