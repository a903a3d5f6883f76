package realcluster

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// The nodes' own paths (nodePaths) are bind mounts in their mount
// namespaces, and a bind mount needs its target on the host too: Up
// creates the missing ones there, and Down removes what Up created, so
// that a machine without a kubelet keeps no empty /var/lib/kubelet,
// /etc/cni/net.d or /opt/cni/bin after the cluster is gone.

// makeMountPoints creates the directories of paths that the host lacks,
// with their missing parents, and returns those it created, parents first.
func makeMountPoints(paths []string) ([]string, error) {
	var made []string
	for _, p := range paths {
		var missing []string
		for d := filepath.Clean(p); ; d = filepath.Dir(d) {
			if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
				break
			}
			missing = append(missing, d)
		}
		for i := len(missing) - 1; i >= 0; i-- {
			if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return made, err
			}
			made = append(made, missing[i])
		}
	}
	return made, nil
}

// removeMountPoints removes the directories makeMountPoints made, children
// first. One that holds something now (someone else put it there) stays.
func removeMountPoints(made []string) error {
	var errs []error
	for i := len(made) - 1; i >= 0; i-- {
		err := os.Remove(made[i])
		if err == nil || errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			continue
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
