package images

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// imageSpec says what an image holds.
type imageSpec struct {
	// Refs are the image's references (parseRefs).
	Refs []name.Tag
	// Files are the programs of its only layer.
	Files []layerFile
	// Entrypoint is what the container runs when a Pod names no command.
	Entrypoint []string
	// CreatedBy is the layer's history entry (`ctr`/`crictl` show it).
	CreatedBy string
}

// pathEnv is the PATH of every image, distroless's (the base of
// install/image/Containerfile): the chart runs `command: [herald-agent]`
// and `kubectl exec ... -- herald-dbg` names no directory, so the runtime
// looks the programs up on the image's PATH.
const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// writeImage writes the image s into a docker-archive tarball at path,
// using tmpDir for the layer's tar.
//
// go-containerregistry does the image format: the layer's digests and
// compression (gzip), the config with its rootfs diff IDs, the manifest,
// and the archive's manifest.json with the tags (one image entry listing
// them all: containerd creates one image name per tag). The image's
// digests depend only on the files; with several refs the order of the
// tags in manifest.json may vary between runs (the writer ranges over a
// map), which changes the archive's bytes but not the image.
func writeImage(path, tmpDir string, s imageSpec) error {
	layerPath := filepath.Join(tmpDir, "layer.tar")
	if err := writeLayerFile(layerPath, s.Files); err != nil {
		return err
	}
	// The uncompressed layer is read from the file when needed, not held
	// in memory (Herald's binaries are over 100 MB); the compressed one
	// (about a third of that) is kept after its digest is computed, so
	// writing the archive does not gzip it a second time.
	layer, err := tarball.LayerFromFile(layerPath, tarball.WithCompressedCaching)
	if err != nil {
		return err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: s.CreatedBy},
	})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: epoch}
	cf.OS = "linux"
	cf.Architecture = goarch
	cf.Config = v1.Config{
		Entrypoint: s.Entrypoint,
		Env:        []string{pathEnv},
		WorkingDir: "/",
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	refs := make(map[name.Reference]v1.Image, len(s.Refs))
	for _, t := range s.Refs {
		refs[t] = img
	}
	return writeArchive(path, refs)
}

// parseRefs parses an image's references. They must spell out the
// registry and the tag (strict validation): a short name would be written
// into the archive as index.docker.io/library/...:latest, not the name a
// Pod spelling it the short way finds in containerd.
func parseRefs(refs []string) ([]name.Tag, error) {
	if len(refs) == 0 {
		return nil, errors.New("no image refs")
	}
	tags := make([]name.Tag, len(refs))
	for i, r := range refs {
		t, err := name.NewTag(r, name.StrictValidation)
		if err != nil {
			return nil, fmt.Errorf("image ref %q: %w", r, err)
		}
		tags[i] = t
	}
	return tags, nil
}

// writeLayerFile writes a layer's tar to path.
func writeLayerFile(path string, files []layerFile) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeLayerTar(f, files); err != nil {
		f.Close()
		return fmt.Errorf("layer %s: %w", path, err)
	}
	return f.Close()
}

// writeArchive writes the tarball beside path and renames it into place:
// an interrupted build leaves no truncated tarball under the name a
// caller loads, and a node importing the previous one never reads half a
// new one. (tarball.MultiRefWriteToFile would do the writing, but ignores
// the error of closing the file.)
func writeArchive(path string, refs map[name.Reference]v1.Image) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename: nothing there
	if err := tarball.MultiRefWrite(refs, f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	// CreateTemp made it 0600; an image is no secret.
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
