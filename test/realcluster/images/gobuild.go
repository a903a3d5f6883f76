package images

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// goarch is the architecture the binaries are built for and the images
// declare: this machine's, where the nodes' containerd runs them (and
// unpacks an image only for its own platform).
const goarch = runtime.GOARCH

// goBuildFlags are the flags of every build (see goBuild).
var goBuildFlags = []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w"}

// goBuild builds the main packages pkgs (relative to repoRoot, e.g.
// ./cmd/herald-agent) into dir, one binary per package named after its
// directory, as install/image/Containerfile builds Herald's:
// `CGO_ENABLED=0 go build -trimpath -ldflags="-s -w"`, so the binaries are
// static and need nothing from the image.
//
// The environment is pinned where it would change the binaries:
//   - GOWORK=off: the repository's go.mod alone, as in the Containerfile's
//     build context, whatever go.work a developer has above it;
//   - GOFLAGS cleared: the Containerfile sets its own, and one inherited
//     from a shell (-race, -tags, -cover) would change what is built;
//   - -buildvcs=false: the Containerfile's context excludes .git, so its
//     binaries carry no VCS stamp; stamping here would make the binaries
//     depend on the work tree's state (and not reproducible);
//   - GOOS/GOARCH: Linux on this machine's architecture (goarch).
func goBuild(ctx context.Context, repoRoot, dir string, pkgs ...string) error {
	args := append(append([]string{"build"}, goBuildFlags...), "-o", dir+string(filepath.Separator))
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS=", "GOOS=linux", "GOARCH="+goarch)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(pkgs, " "), err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}
