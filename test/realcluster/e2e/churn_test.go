package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testAgentRestartKeepsPodAddresses: every agent Pod is deleted (one node
// after the other, as a rollout does); the DaemonSet starts new ones, the
// pods keep their addresses and still reach each other, and new pods get
// addresses no one has.
func testAgentRestartKeepsPodAddresses(t *testing.T) {
	ns := newNamespace(t, "restart", nil)
	before := deployBackend(t, ns, "keep", 3, nil)
	ctx := context.Background()
	for _, n := range cl.Nodes {
		old := agentPods(t)[n.Name]
		if err := cl.Client.CoreV1().Pods(heraldNS).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, timeout, func() (bool, string) {
			p, ok := agentPods(t)[n.Name]
			return ok && p.UID != old.UID && podReady(&p), fmt.Sprintf("no new Ready agent Pod on %s yet", n.Name)
		})
	}
	after := waitPodsReady(t, ns, "app=keep", 3)
	for _, p := range before {
		i := slices.IndexFunc(after, func(q corev1.Pod) bool { return q.UID == p.UID })
		if i < 0 {
			t.Fatalf("pod %s was replaced while the agents restarted", p.Name)
		}
		if !slices.Equal(podAddrs(p), podAddrs(after[i])) {
			t.Fatalf("pod %s had %v, now %v", p.Name, podAddrs(p), podAddrs(after[i]))
		}
	}
	for _, from := range after {
		for _, to := range after {
			if from.Spec.NodeName == to.Spec.NodeName {
				continue
			}
			for _, a := range podAddrs(to) {
				expectReaches(t, from, to, a)
			}
		}
	}
	more := deployBackend(t, ns, "more", 3, nil)
	taken := map[string]string{}
	for _, p := range append(after, more...) {
		for _, a := range podAddrs(p) {
			if other, ok := taken[a.String()]; ok {
				t.Fatalf("%s is both %s's and %s's", a, other, p.Name)
			}
			taken[a.String()] = p.Name
		}
	}
}

// testChurn: 200 pods are created and deleted; then every node's agent,
// asked with kubectl exec, finds no leaked and no duplicate address, and
// the nodes list no address of them in use.
func testChurn(t *testing.T) {
	const n = 200
	ns := newNamespace(t, "churn", nil)
	deployBackend(t, ns, "churn", 0, nil)
	ctx := context.Background()
	scale := func(replicas int) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		if _, err := cl.Client.AppsV1().Deployments(ns).Patch(ctx, "churn", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scale(n)
	pods := waitPodsReady(t, ns, "app=churn", n)
	taken := map[string]string{}
	for _, p := range pods {
		for _, a := range podAddrs(p) {
			if other, ok := taken[a.String()]; ok {
				t.Fatalf("%s is both %s's and %s's", a, other, p.Name)
			}
			taken[a.String()] = p.Name
		}
	}
	scale(0)
	waitFor(t, timeout, func() (bool, string) {
		list, err := cl.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=churn"})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d churn pods left", len(list.Items))
	})
	waitFor(t, timeout, func() (bool, string) {
		for _, node := range cl.Nodes {
			used, err := usedOn(node.Name)
			if err != nil {
				return false, err.Error()
			}
			for ip, owner := range used {
				if _, ok := taken[ip]; ok {
					return false, fmt.Sprintf("%s still lists %s (%s) in use", node.Name, ip, owner)
				}
			}
		}
		return true, ""
	})
	for _, node := range cl.Nodes {
		rep := ipamCheck(t, node.Name)
		if rep.Errors != 0 {
			t.Errorf("herald-dbg ipam check on %s after %d pods came and went: %d errors: %+v", node.Name, n, rep.Errors, rep.Findings)
		}
	}
}
