package images

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/test/cluster"
)

// TestHeraldImageMatchesContainerfile builds Herald's image and checks it
// against install/image/Containerfile, the published image's recipe: every
// file its final stage copies is there, at the same path, an executable
// regular file of root's, and nothing else is; the entrypoint is the
// same. A binary added to the Containerfile, or another ENTRYPOINT, fails
// it until BuildHerald follows.
func TestHeraldImageMatchesContainerfile(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	text, err := os.ReadFile(filepath.Join(root, "install", "image", "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := parseContainerfile(string(text))
	if err != nil {
		t.Fatalf("install/image/Containerfile: %v", err)
	}
	appVersion, err := AppVersion(root)
	if err != nil {
		t.Fatal(err)
	}

	b, err := BuildHerald(t.Context(), root, t.TempDir(), "second-tag")
	if err != nil {
		t.Fatal(err)
	}
	if wantRefs := []string{HeraldRef(appVersion), HeraldRef("second-tag")}; !reflect.DeepEqual(b.Refs, wantRefs) {
		t.Errorf("refs %v, want %v", b.Refs, wantRefs)
	}
	img := readImage(t, b.Path, b.Refs[0])
	// Both tags name the same image.
	if d0, d1 := digest(t, img), digest(t, readImage(t, b.Path, b.Refs[1])); d0 != d1 {
		t.Errorf("%s is %s, %s is %s", b.Refs[0], d0, b.Refs[1], d1)
	}
	checkImage(t, img, want.Files, want.Entrypoint)
}

// TestHeraldRepositoryIsTheChartDefault: the chart, installed with its
// default image values, runs the image BuildHerald tags.
func TestHeraldRepositoryIsTheChartDefault(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Image struct {
			Repository, Tag, Digest string
		}
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Repository != HeraldRepository || values.Image.Tag != "" || values.Image.Digest != "" {
		t.Errorf("chart's image values %+v, want repository %s and no tag or digest (appVersion)", values.Image, HeraldRepository)
	}
}

// TestPauseImage builds the sandbox image, checks it, and runs its
// program: SIGTERM and SIGINT end it with status 0.
func TestPauseImage(t *testing.T) {
	t.Parallel()
	b, err := BuildPause(t.Context(), repoRoot(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b.Refs, []string{PauseRef}) {
		t.Errorf("refs %v, want %s", b.Refs, PauseRef)
	}
	img := readImage(t, b.Path, PauseRef)
	checkImage(t, img, []string{"/usr/bin/pause"}, []string{"/usr/bin/pause"})

	bin := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(bin, readFile(t, img, "/usr/bin/pause"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			// Its first line says its handlers are in place.
			if line, err := readLine(stderr); err != nil || !strings.HasPrefix(line, "pause: started") {
				t.Fatalf("first line %q, %v", line, err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, _ = io.Copy(io.Discard, stderr)
				done <- cmd.Wait()
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("after %v: %v, want exit status 0", sig, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("still running 10s after %v", sig)
			}
		})
	}
}

// TestBackendImage builds the backend image and checks it.
func TestBackendImage(t *testing.T) {
	t.Parallel()
	b, err := BuildBackend(t.Context(), repoRoot(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b.Refs, []string{BackendRef}) {
		t.Errorf("refs %v, want %s", b.Refs, BackendRef)
	}
	checkImage(t, readImage(t, b.Path, BackendRef), []string{"/usr/bin/httpecho"}, []string{"/usr/bin/httpecho"})
}

// TestMetalLBImages: MetalLB's programs at the paths and with the
// entrypoints of its Dockerfiles, under the names its manifest uses.
func TestMetalLBImages(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	for _, p := range []string{"controller", "speaker"} {
		if err := os.WriteFile(filepath.Join(bin, p), []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctrl, speaker, err := BuildMetalLB(bin, "v0.15.2", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		built   Built
		program string
	}{{ctrl, "controller"}, {speaker, "speaker"}} {
		ref := "quay.io/metallb/" + c.program + ":v0.15.2"
		if !reflect.DeepEqual(c.built.Refs, []string{ref}) {
			t.Errorf("refs %v, want %s", c.built.Refs, ref)
		}
		checkImage(t, readImage(t, c.built.Path, ref), []string{"/" + c.program}, []string{"/" + c.program})
	}
}

// TestBuildIsReproducible: two builds of an image give the same tarball,
// byte for byte (with one tag; see writeImage), so the same digests.
func TestBuildIsReproducible(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	var tarballs [2][]byte
	for i := range tarballs {
		b, err := BuildPause(t.Context(), root, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if tarballs[i], err = os.ReadFile(b.Path); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(tarballs[0], tarballs[1]) {
		t.Error("two builds of the pause image differ")
	}
}

// checkImage checks an image's files and config: its regular files are
// files (no more, no fewer), each an executable of root's; its entrypoint
// is entrypoint, with no CMD, and the directories of files but / are on
// its PATH (the chart names herald-agent and herald-ipam without one);
// platform this machine's.
func checkImage(t *testing.T, img v1.Image, files, entrypoint []string) {
	t.Helper()
	hdrs := headers(t, img)
	var regular []string
	for p, h := range hdrs {
		if h.Typeflag == tar.TypeReg {
			regular = append(regular, p)
		}
	}
	sort.Strings(regular)
	wantFiles := slices.Sorted(slices.Values(files))
	if !reflect.DeepEqual(regular, wantFiles) {
		t.Errorf("image's regular files %v, want %v", regular, wantFiles)
	}
	for _, f := range files {
		h, ok := hdrs[f]
		switch {
		case !ok:
			t.Errorf("%s: missing", f)
		case h.Typeflag != tar.TypeReg:
			t.Errorf("%s: type %q, want a regular file", f, h.Typeflag)
		case h.Mode&0o777 != 0o755:
			t.Errorf("%s: mode %o, want 0755", f, h.Mode)
		case h.Uid != 0 || h.Gid != 0:
			t.Errorf("%s: owner %d:%d, want root", f, h.Uid, h.Gid)
		}
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cf.Config.Entrypoint, entrypoint) {
		t.Errorf("entrypoint %q, want %q", cf.Config.Entrypoint, entrypoint)
	}
	if len(cf.Config.Cmd) != 0 {
		t.Errorf("cmd %q, want none", cf.Config.Cmd)
	}
	var pathDirs []string
	for _, e := range cf.Config.Env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			pathDirs = strings.Split(v, ":")
		}
	}
	for _, f := range files {
		// MetalLB's images keep their programs at /, which no manifest
		// names but as the entrypoint.
		if path.Dir(f) != "/" && !slices.Contains(pathDirs, path.Dir(f)) {
			t.Errorf("%s: not on the image's PATH %v", f, pathDirs)
		}
	}
	if cf.OS != "linux" || cf.Architecture != goarch {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, goarch)
	}
}

// readImage reads the image ref from a docker-archive tarball.
func readImage(t *testing.T, tarballPath, ref string) v1.Image {
	t.Helper()
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(tarballPath, &tag)
	if err != nil {
		t.Fatalf("%s in %s: %v", ref, tarballPath, err)
	}
	return img
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// headers returns the headers of an image's file tree (its layers
// flattened), by absolute path.
func headers(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	hdrs := map[string]*tar.Header{}
	walk(t, img, func(p string, h *tar.Header, _ io.Reader) bool {
		hdrs[p] = h
		return true
	})
	return hdrs
}

// readFile returns the contents of the file at p (absolute) in an image.
func readFile(t *testing.T, img v1.Image, p string) []byte {
	t.Helper()
	var data []byte
	walk(t, img, func(q string, _ *tar.Header, r io.Reader) bool {
		if q != p {
			return true
		}
		var err error
		if data, err = io.ReadAll(r); err != nil {
			t.Fatal(err)
		}
		return false
	})
	if data == nil {
		t.Fatalf("%s: not in the image", p)
	}
	return data
}

// walk calls f for every entry of an image's flattened file tree, with its
// absolute path, until f returns false.
func walk(t *testing.T, img v1.Image, f func(p string, h *tar.Header, r io.Reader) bool) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !f(path.Join("/", h.Name), h, tr) {
			return
		}
	}
}

// readLine reads r up to the first newline, byte by byte: what follows
// stays unread.
func readLine(r io.Reader) (string, error) {
	var line []byte
	b := make([]byte, 1)
	for {
		if _, err := r.Read(b); err != nil {
			return string(line), err
		}
		if b[0] == '\n' {
			return string(line), nil
		}
		line = append(line, b[0])
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root := cluster.RepoRoot()
	if root == "" {
		t.Fatal("no repository root above the working directory")
	}
	return root
}
