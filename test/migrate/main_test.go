// Package migrate tests herald-dbg migrate metallb against a real
// kube-apiserver with Herald's CRDs and MetalLB's: reading MetalLB's
// objects from the cluster, and --apply.
package migrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	os.Exit(run(m))
}

func run(m *testing.M) int {
	c, err := cluster.Start(cluster.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Stop()
	testCluster = c
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if clientset, err = versioned.NewForConfig(c.RESTConfig); err == nil {
		dyn, err = dynamic.NewForConfig(c.RESTConfig)
	}
	for _, dir := range []string{filepath.Join(cluster.RepoRoot(), "install", "crds"), "metallb-crds"} {
		if err == nil {
			err = c.InstallCRDs(ctx, dir)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "migrate:", err)
		return 1
	}
	return m.Run()
}
