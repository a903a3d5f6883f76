package cnitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/heraldlb/herald/test/cluster"
)

// PluginsVersion is the containernetworking/plugins release the tests run:
// the version install/dev/tools-cni/go.mod requires (a test checks that the
// two agree).
const PluginsVersion = "v1.8.0"

// ReferencePlugins are the plugins ensure-cni-plugins.sh builds.
var ReferencePlugins = []string{"bridge", "loopback", "host-local"}

// PluginsDir is where install/dev/ensure-cni-plugins.sh puts the reference
// plugins: ${HERALD_CACHE:-$HOME/.cache/herald}/cni-plugins-<version>.
func PluginsDir() string {
	cache := os.Getenv("HERALD_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "herald")
	}
	return filepath.Join(cache, "cni-plugins-"+PluginsVersion)
}

// RequirePlugins returns PluginsDir, or an error saying how to build what is
// missing.
func RequirePlugins() (string, error) {
	dir := PluginsDir()
	for _, p := range ReferencePlugins {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("cnitest: CNI plugin %s missing in %s: run make tools (install/dev/ensure-cni-plugins.sh)", p, dir)
		}
	}
	return dir, nil
}

// BuildHeraldIPAM builds cmd/herald-ipam of this tree into dir and returns
// its path. dir then goes into the runtime's plugin path.
func BuildHeraldIPAM(dir string) (string, error) {
	root := cluster.RepoRoot()
	if root == "" {
		return "", fmt.Errorf("cnitest: cannot find the repository root")
	}
	bin := filepath.Join(dir, "herald-ipam")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/herald-ipam")
	cmd.Dir = root
	// As the Makefile and the image build it: static.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cnitest: go build ./cmd/herald-ipam: %w\n%s", err, out)
	}
	return bin, nil
}
