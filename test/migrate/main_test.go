// Package migrate tests herald-dbg migrate metallb against a real
// kube-apiserver with Herald's CRDs and MetalLB's: reading MetalLB's
// objects from the cluster, and --apply.
package migrate

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/dynamic"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/test/cluster"
)

var (
	testCluster *cluster.Cluster
	clientset   versioned.Interface
	dyn         dynamic.Interface
)

func TestMain(m *testing.M) {
	os.Exit(cluster.RunWithCRDs(m, "migrate", func(c *cluster.Cluster) (err error) {
		testCluster = c
		if clientset, err = versioned.NewForConfig(c.RESTConfig); err != nil {
			return err
		}
		dyn, err = dynamic.NewForConfig(c.RESTConfig)
		return err
	}, filepath.Join(cluster.RepoRoot(), "install", "crds"), "metallb-crds"))
}
