package images

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// binDir is where every image keeps its programs, as
// install/image/Containerfile puts Herald's.
const binDir = "/usr/bin"

// program is a main package of this module built into an image: its
// binary is /usr/bin/<the package directory's name>.
type program string

func (p program) binary() string { return path.Base(string(p)) }
func (p program) path() string   { return path.Join(binDir, p.binary()) }

// buildImage builds progs from the module at repoRoot and writes an image
// of them, with refs and the entrypoint program entry, to outDir/file
// (outDir is created). The binaries and the layer are built in a
// temporary directory under outDir and removed afterwards: nothing is left
// but the tarball.
func buildImage(ctx context.Context, repoRoot, outDir, file string, refs []string, entry program, progs ...program) (Built, error) {
	tags, err := parseRefs(refs) // before minutes of building
	if err != nil {
		return Built{}, err
	}
	outDir, err = filepath.Abs(outDir)
	if err != nil {
		return Built{}, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return Built{}, err
	}
	tmp, err := os.MkdirTemp(outDir, ".build-")
	if err != nil {
		return Built{}, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		return Built{}, err
	}

	pkgs := make([]string, len(progs))
	files := make([]layerFile, len(progs))
	for i, p := range progs {
		pkgs[i] = string(p)
		files[i] = layerFile{Path: p.path(), Src: filepath.Join(bin, p.binary())}
	}
	if err := goBuild(ctx, repoRoot, bin, pkgs...); err != nil {
		return Built{}, err
	}
	out := filepath.Join(outDir, file)
	err = writeImage(out, tmp, imageSpec{
		Refs:       tags,
		Files:      files,
		Entrypoint: []string{entry.path()},
		CreatedBy:  fmt.Sprintf("CGO_ENABLED=0 go build %q %s -> %s/", goBuildFlags, strings.Join(pkgs, " "), binDir),
	})
	if err != nil {
		return Built{}, fmt.Errorf("image %s: %w", file, err)
	}
	return Built{Path: out, Refs: refs}, nil
}
