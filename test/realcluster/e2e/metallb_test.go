package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/test/realcluster"
	"github.com/heraldlb/herald/test/realcluster/images"
)

// MetalLB as its users install it: its own images (built from its Go
// module by hack/metallb.sh, under the names its manifest gives them) and
// its install manifest, config/manifests/metallb-native.yaml.

const (
	metallbVersion = "v0.15.2"
	metallbNS      = "metallb-system"
)

// installMetalLB builds and loads MetalLB's images, applies its manifest
// and waits for its controller and a speaker on every node; it removes
// MetalLB when the test ends. One change to the manifest: no
// ValidatingWebhookConfiguration, because this cluster's API server is no
// node and cannot reach a webhook in a Pod (Documentation/real-cluster.md).
// MetalLB's objects are then checked by their CRD schemas only.
func installMetalLB(t *testing.T) (manifest string) {
	t.Helper()
	ctx := ctxTimeout(t)
	out, err := exec.CommandContext(ctx, filepath.Join(realcluster.RepoRoot(), "hack", "metallb.sh")).Output()
	if err != nil {
		t.Fatalf("hack/metallb.sh: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	ctrl, speaker, err := images.BuildMetalLB(dir, metallbVersion, filepath.Join(work, "images"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cl.Nodes {
		for _, img := range []images.Built{ctrl, speaker} {
			if err := cl.LoadImage(ctx, n, img.Path); err != nil {
				t.Fatal(err)
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "metallb-native.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	manifest = withoutKind(string(raw), "ValidatingWebhookConfiguration")
	kubectlStdin(t, manifest, "apply", "-f", "-")
	t.Cleanup(func() { removeMetalLB(t, manifest) })
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := cl.RunKubectl(context.Background(), "-n", metallbNS, "logs", "-l", "component=speaker", "--prefix", "--tail=60")
			t.Logf("MetalLB's speakers:\n%s", out)
		}
	})
	waitFor(t, timeout, func() (bool, string) {
		d, err := cl.Client.AppsV1().Deployments(metallbNS).Get(ctx, "controller", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 1, fmt.Sprintf("MetalLB's controller: %d available", d.Status.AvailableReplicas)
	})
	if err := cl.WaitDaemonSet(ctx, metallbNS, "speaker"); err != nil {
		t.Fatal(err)
	}
	return manifest
}

// removeMetalLB deletes what its manifest created and waits until its
// Pods are gone: no speaker answers any more.
func removeMetalLB(t *testing.T, manifest string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := cl.RunKubectlStdin(ctx, manifest, "delete", "--ignore-not-found", "--wait=false", "-f", "-"); err != nil {
		t.Errorf("removing MetalLB: %v", err)
		return
	}
	waitFor(t, timeout, func() (bool, string) {
		pods, err := cl.Client.CoreV1().Pods(metallbNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d MetalLB Pods left", len(pods.Items))
	})
}

// withoutKind drops the documents of a kind from a YAML stream.
func withoutKind(manifest, kind string) string {
	var keep []string
	for _, doc := range strings.Split(manifest, "\n---\n") {
		if !strings.Contains(doc, "\nkind: "+kind+"\n") {
			keep = append(keep, doc)
		}
	}
	return strings.Join(keep, "\n---\n")
}

// metallbControllerGone waits until no MetalLB controller Pod is left,
// after its Deployment was scaled to zero.
func metallbControllerGone(t *testing.T) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		pods, err := cl.Client.CoreV1().Pods(metallbNS).List(context.Background(), metav1.ListOptions{LabelSelector: "component=controller"})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d MetalLB controller Pods left", len(pods.Items))
	})
}
