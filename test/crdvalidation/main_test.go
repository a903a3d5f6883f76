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

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
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
		err = installCRDs(ctx, c, filepath.Join(cluster.RepoRoot(), "install", "crds"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crdvalidation:", err)
		return 1
	}
	return m.Run()
}

// installCRDs does what `kubectl apply -f install/crds/` does for a fresh
// cluster and waits until the pool resource can be listed in every version.
// Creating the CRD is itself a check: the API server rejects CEL rules that
// do not compile or whose estimated cost exceeds its budget.
func installCRDs(ctx context.Context, c *cluster.Cluster, dir string) error {
	ext, err := apiextensions.NewForConfig(c.RESTConfig)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s (%v)", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(b, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s: %w", f, err)
		}
	}

	// Established can be reported shortly before the resource is served, so
	// wait for a successful list instead.
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, v := range servedVersions {
			gvr := v2alpha1.SchemeGroupVersion.WithResource(v2alpha1.PoolPlural)
			gvr.Version = v
			if _, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{}); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
}
