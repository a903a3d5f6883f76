// Package crdvalidation checks the CRDs in install/crds against a real
// kube-apiserver: that valid objects (LB IPAM pools, pod IP pools, CiliumNodes)
// are accepted under every served version and that the OpenAPI and CEL rules
// reject bad ones with messages naming the field.
//
// The CRDs must install and validate the same on every Kubernetes version
// Herald supports, so make test runs this package twice: against the current
// kube-apiserver and, with HERALD_KUBE_VERSION=v1.31.14, against the oldest
// (test/cluster). Expected messages are substrings both versions print.
package crdvalidation

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/dynamic"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/cluster"
)

var (
	// clientset speaks cilium.io/v2alpha1 (the version of the Go types)
	// and cilium.io/v2 (CiliumNode).
	clientset versioned.Interface
	// dyn applies manifests untyped, as kubectl does, and reaches the
	// served versions that have no Go types.
	dyn dynamic.Interface
	// testCluster is the control plane the tests run against.
	testCluster *cluster.Cluster
)

func TestMain(m *testing.M) {
	os.Exit(cluster.RunWithCRDs(m, "crdvalidation", func(c *cluster.Cluster) (err error) {
		testCluster = c
		if clientset, err = versioned.NewForConfig(c.RESTConfig); err != nil {
			return err
		}
		dyn, err = dynamic.NewForConfig(c.RESTConfig)
		return err
	}, filepath.Join(cluster.RepoRoot(), "install", "crds")))
}

// TestAPIServerVersion makes sure the suite runs against the version it was
// asked for (HERALD_KUBE_VERSION), so that a run meant for the oldest
// version cannot silently test the current one.
func TestAPIServerVersion(t *testing.T) {
	v, err := testCluster.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != testCluster.KubeVersion {
		t.Fatalf("kube-apiserver %s, want %s", v.GitVersion, testCluster.KubeVersion)
	}
	t.Logf("kube-apiserver %s", v.GitVersion)
}
