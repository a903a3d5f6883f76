package multipool

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestGarbageCollection: addresses whose DEL never came are released by the
// agent once their pod is gone (the Pod object deleted) or replaced by
// another pod of the same name (another UID); a pod that exists keeps its
// address. The node's agent runs with a short ipam-gc-grace (2s instead of
// a minute) for the test.
func TestGarbageCollection(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[1]
	restartAgent(t, n, "--ipam-gc-grace=2s")
	defer restartAgent(t, n)

	ns := namespace(t, "gc", nil)
	kept := startPod(t, n, ns, "kept", nil)
	defer kept.stop(t)
	gone := startPod(t, n, ns, "gone", nil)
	replaced := startPod(t, n, ns, "replaced", nil)
	defer gone.stop(t) // the runtime's DEL at last: nothing left to release
	defer replaced.stop(t)

	// No DEL: the pod's sandbox vanishes with its Pod object...
	ctx := context.Background()
	_ = gone.netns.Delete()
	if err := kube.CoreV1().Pods(ns).Delete(ctx, "gone", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	// ... or the Pod is recreated under the same name (a StatefulSet's).
	if err := kube.CoreV1().Pods(ns).Delete(ctx, "replaced", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	again, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "replaced", Namespace: ns},
		Spec:       corev1.PodSpec{NodeName: n.name, Containers: []corev1.Container{{Name: "c", Image: "none"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(again.UID) == replaced.UID {
		t.Fatal("the recreated Pod has the old UID")
	}

	held := func() (map[string][]string, error) {
		rows, err := n.allocations()
		if err != nil {
			return nil, err
		}
		out := map[string][]string{}
		for _, r := range rows {
			if r.PodNS == ns {
				out[r.PodName] = append(out[r.PodName], r.IP.String())
			}
		}
		return out, nil
	}
	waitFor(t, timeout, func() (bool, string) {
		h, err := held()
		if err != nil {
			return false, err.Error()
		}
		return len(h["gone"]) == 0 && len(h["replaced"]) == 0, fmt.Sprintf("still allocated: %v", h)
	})
	h, err := held()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, a := range kept.IPs() {
		want = append(want, a.String())
	}
	got := h["kept"]
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the pod that exists holds %v after garbage collection, want %v", got, want)
	}
}
