// Package lbipam replays the LB IPAM spec (spec/lb-ipam.rst) against a real
// etcd + kube-apiserver with the agent running as a real subprocess: every
// example manifest of the spec is applied as written and the documented
// outcome is checked with the exact condition types, reasons and messages.
//
// TestMain starts one control plane, builds herald-agent and herald-dbg
// once, and installs install/crds. Every test starts its own agent(s), works
// in its own namespace and deletes the pools it created, so tests do not
// depend on each other. Tests wait for outcomes (waitFor) and never assert
// how long anything took.
package lbipam

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
)

// Shared by all tests; set up once by TestMain.
var (
	testCluster *cluster.Cluster
	kube        kubernetes.Interface
	dyn         dynamic.Interface
	herald      versioned.Interface

	// agentBin and dbgBin are the binaries built from ./cmd/herald-agent
	// and ./cmd/herald-dbg.
	agentBin, dbgBin string
	// kubectlCacheDir keeps kubectl's discovery cache out of $HOME.
	kubectlCacheDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root := cluster.RepoRoot()
	if root == "" {
		fmt.Fprintln(os.Stderr, "lbipam: cannot find the repository root")
		return 1
	}
	tmp, err := os.MkdirTemp("", "herald-lbipam-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "lbipam:", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	// Build first: a compile error is reported before a cluster is started.
	kubectlCacheDir = filepath.Join(tmp, "kubectl-cache")
	if agentBin, dbgBin, err = agentproc.Build(root, tmp); err != nil {
		fmt.Fprintln(os.Stderr, "lbipam:", err)
		return 1
	}

	c, err := cluster.Start(cluster.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Stop()
	testCluster = c
	kube = c.Client
	if dyn, err = dynamic.NewForConfig(c.RESTConfig); err == nil {
		herald, err = versioned.NewForConfig(c.RESTConfig)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lbipam:", err)
		return 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testCluster.InstallCRDs(ctx, filepath.Join(root, "install", "crds")); err != nil {
		fmt.Fprintln(os.Stderr, "lbipam: installing CRDs:", err)
		return 1
	}
	if err := ensureNamespace(ctx, metav1.NamespaceSystem); err != nil {
		fmt.Fprintln(os.Stderr, "lbipam:", err)
		return 1
	}
	return m.Run()
}

func ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// splitYAML splits a multi-document YAML stream on "---" lines and drops
// empty documents.
func splitYAML(s string) []string {
	var docs []string
	var cur []string
	flush := func() {
		doc := strings.TrimSpace(strings.Join(cur, "\n"))
		if doc != "" {
			docs = append(docs, doc+"\n")
		}
		cur = nil
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return docs
}

// poolGVR is the resource of the spec's manifests (cilium.io/v2alpha1).
var poolGVR = v2alpha1.SchemeGroupVersion.WithResource(v2alpha1.PoolPlural)
