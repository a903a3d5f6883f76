package cluster

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// RunWithCRDs is the TestMain of a package whose tests share one control
// plane with CRDs installed: it starts the cluster, installs the CRDs of
// every directory in crdDirs, hands the cluster to setup (which keeps it,
// or clients made from it, for the tests), runs the tests and stops the
// cluster. It returns the exit code for os.Exit; a failure to set up is
// printed with the package's name.
func RunWithCRDs(m *testing.M, name string, setup func(*Cluster) error, crdDirs ...string) int {
	c, err := Start(Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, dir := range crdDirs {
		if err == nil {
			err = c.InstallCRDs(ctx, dir)
		}
	}
	if err == nil {
		err = setup(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	return m.Run()
}
