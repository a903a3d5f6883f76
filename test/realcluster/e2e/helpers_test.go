package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/test/realcluster"
	"github.com/heraldlb/herald/test/suite"
)

const (
	// timeout bounds every wait of the suite.
	timeout = 3 * time.Minute
	// upgradeTag is a second tag of Herald's image, for the image upgrade.
	upgradeTag = "0.1.0-upgrade"
	heraldNS   = realcluster.HeraldNamespace
	heraldDS   = "herald"
)

// helmInstall installs Herald as the documentation does, with the suite's
// values, and waits until every agent runs and is Ready.
func helmInstall(ctx context.Context, extra ...string) error {
	args := append([]string{"install", realcluster.HeraldRelease, realcluster.ChartDir(),
		"--namespace", heraldNS, "--values", realcluster.ValuesFile()}, extra...)
	if _, err := cl.RunHelm(ctx, args...); err != nil {
		return err
	}
	return cl.WaitDaemonSet(ctx, heraldNS, heraldDS)
}

// waitFor polls cond until it holds.
func waitFor(t testing.TB, within time.Duration, cond func() (bool, string)) {
	t.Helper()
	suite.WaitFor(t, within, cond)
}

// kubectl runs kubectl as the administrator; the test fails if it does.
func kubectl(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := cl.RunKubectl(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// agentPods returns the agent Pods by node.
func agentPods(t testing.TB) map[string]corev1.Pod {
	t.Helper()
	pods, err := cl.Client.CoreV1().Pods(heraldNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=herald"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = p
		}
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// dumpOnFailure logs the agents' recent output when the test fails.
func dumpOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for node, p := range agentPods(t) {
			out, _ := cl.RunKubectl(ctx, "-n", heraldNS, "logs", p.Name, "-c", "agent", "--tail", "60")
			t.Logf("----- agent on %s (%s) -----\n%s", node, p.Name, strings.TrimSpace(string(out)))
		}
		out, _ := cl.RunKubectl(ctx, "get", "pods", "-A", "-o", "wide")
		t.Logf("----- pods -----\n%s", out)
	})
}
