package e2e

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/test/realcluster"
)

// testAgentsRunningAndReady: helm install gave every node an agent Pod,
// Running and Ready, with the chart's securityContext as it ships (no
// privileged container), and its init container put herald-ipam into the
// node's CNI plugin directory.
func testAgentsRunningAndReady(t *testing.T) {
	var values struct {
		SecurityContext *corev1.SecurityContext `json:"securityContext"`
	}
	b, err := os.ReadFile(filepath.Join(realcluster.ChartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	pods := agentPods(t)
	if len(pods) != len(cl.Nodes) {
		t.Fatalf("%d agent Pods for %d nodes", len(pods), len(cl.Nodes))
	}
	for _, n := range cl.Nodes {
		p, ok := pods[n.Name]
		if !ok {
			t.Fatalf("no agent Pod on %s", n.Name)
		}
		if p.Status.Phase != corev1.PodRunning || !podReady(&p) {
			t.Fatalf("agent Pod %s on %s: %s, ready %v", p.Name, n.Name, p.Status.Phase, podReady(&p))
		}
		for _, c := range p.Spec.Containers {
			if c.Name != "agent" {
				continue
			}
			if !reflect.DeepEqual(c.SecurityContext, values.SecurityContext) {
				t.Fatalf("agent container securityContext %+v, the chart's default is %+v", c.SecurityContext, values.SecurityContext)
			}
			if c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
				t.Fatal("the agent runs privileged")
			}
		}
		fi, err := os.Stat(n.HostPath("/opt/cni/bin/herald-ipam"))
		if err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("herald-ipam not installed on %s: %v", n.Name, err)
		}
	}
}
