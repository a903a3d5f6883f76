// Package crdvalidation checks the CRDs in install/crds against a real
// kube-apiserver: that valid pools are accepted under every served version and
// that the OpenAPI and CEL rules reject bad ones with messages naming the field.
package crdvalidation

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
	// clientset speaks cilium.io/v2alpha1, the storage version.
	clientset versioned.Interface
	// dyn reaches the other served versions, which have no Go types.
	dyn dynamic.Interface
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

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if clientset, err = versioned.NewForConfig(c.RESTConfig); err == nil {
		dyn, err = dynamic.NewForConfig(c.RESTConfig)
	}
	if err == nil {
		err = c.InstallCRDs(ctx, filepath.Join(cluster.RepoRoot(), "install", "crds"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crdvalidation:", err)
		return 1
	}
	return m.Run()
}
