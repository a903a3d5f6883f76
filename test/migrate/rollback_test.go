package migrate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestRollbackCommands runs the kubectl commands of
// Documentation/migrating-from-metallb.md that save MetalLB's
// L2Advertisements and put them back, against a real API server with
// MetalLB's CRDs. Between the backup and the rollback MetalLB's
// controller has written its pool's status, as it does on every
// allocation: what is put back must not depend on the pool being
// unchanged.
func TestRollbackCommands(t *testing.T) {
	ctx := context.Background()
	const ns = "metallb-rollback"
	if _, err := testCluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pools := dyn.Resource(schema.GroupVersionResource{Group: "metallb.io", Version: "v1beta1", Resource: "ipaddresspools"}).Namespace(ns)
	l2s := dyn.Resource(schema.GroupVersionResource{Group: "metallb.io", Version: "v1beta1", Resource: "l2advertisements"}).Namespace(ns)
	obj := func(kind string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "metallb.io/v1beta1", "kind": kind,
			"metadata": map[string]any{"name": "vips", "namespace": ns}, "spec": spec}}
	}
	pool, err := pools.Create(ctx, obj("IPAddressPool", map[string]any{"addresses": []any{"198.18.18.0/24"}}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l2s.Create(ctx, obj("L2Advertisement", map[string]any{"ipAddressPools": []any{"vips"}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubectl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("kubectl", append([]string{"--kubeconfig", testCluster.Kubeconfig}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	save := func(file string, args ...string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(kubectl(args...)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Takeover step 1: the backup.
	save("metallb-backup.yaml", "-n", ns, "get", "ipaddresspools,l2advertisements,bgppeers,bgpadvertisements,communities,bfdprofiles", "-o", "yaml")
	// MetalLB's controller allocates an address and counts it in the status.
	pool.Object["status"] = map[string]any{"assignedIPv4": int64(1), "assignedIPv6": int64(0), "availableIPv4": int64(255), "availableIPv6": int64(0)}
	if _, err := pools.UpdateStatus(ctx, pool, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Takeover step 7: MetalLB stops answering; its L2Advertisements are
	// saved first, as they are now.
	save("metallb-l2advertisements.yaml", "-n", ns, "get", "l2advertisements", "-o", "yaml")
	kubectl("-n", ns, "delete", "l2advertisements", "--all")
	if list, err := l2s.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Fatalf("after step 7: %v, %d L2Advertisements", err, len(list.Items))
	}
	// Rollback step 3: MetalLB's L2Advertisements come back.
	kubectl("create", "-f", "metallb-l2advertisements.yaml")
	if _, err := l2s.Get(ctx, "vips", metav1.GetOptions{}); err != nil {
		t.Fatalf("after the rollback: %v", err)
	}
}
