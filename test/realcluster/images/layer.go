package images

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// epoch is the time of every file in a layer and of every image config:
// fixed, so that the same binaries give the same layer and image digests.
var epoch = time.Unix(0, 0).UTC()

// layerFile is a file an image holds: a program, copied from Src on this
// machine to Path (absolute) in the image.
type layerFile struct {
	Path string
	Src  string
}

// writeLayerTar writes a layer's file tree, as an uncompressed tar, to w:
// every file in files and every directory above them, parents first.
//
// The headers are made up, not taken from the build machine
// (tar.FileInfoHeader would copy its owner, modes and times): owner
// root:root, directories 0755 and files 0755 (they are programs, and the
// container runtime's PATH lookup and exec need the x bits; the
// Containerfile's COPY keeps the builder's 0755), times epoch. Directories
// get headers of their own, so their modes are what we say rather than
// whatever the runtime's unpacker picks for implied parents.
func writeLayerTar(w io.Writer, files []layerFile) error {
	dirs := map[string]bool{}
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return fmt.Errorf("layer: path %q is not absolute and clean", f.Path)
		}
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var sorted []string
	for d := range dirs {
		sorted = append(sorted, d)
	}
	// Lexical order puts a directory before everything in it.
	sort.Strings(sorted)

	tw := tar.NewWriter(w)
	for _, d := range sorted {
		hdr := header(d+"/", tar.TypeDir, 0)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := writeFile(tw, f); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeFile writes one file's header and contents.
func writeFile(tw *tar.Writer, f layerFile) error {
	src, err := os.Open(f.Src)
	if err != nil {
		return err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("layer: %s is not a regular file", f.Src)
	}
	if err := tw.WriteHeader(header(f.Path, tar.TypeReg, fi.Size())); err != nil {
		return err
	}
	if _, err := io.Copy(tw, src); err != nil {
		return fmt.Errorf("layer: %s: %w", f.Src, err)
	}
	return nil
}

// header is the tar header of an entry at p (absolute; tar names in
// layers are relative to the root).
func header(p string, typ byte, size int64) *tar.Header {
	return &tar.Header{
		Typeflag: typ,
		Name:     strings.TrimPrefix(p, "/"),
		Size:     size,
		Mode:     0o755,
		Uid:      0,
		Gid:      0,
		Uname:    "root",
		Gname:    "root",
		ModTime:  epoch,
		// USTAR: no PAX records with access or change times, so the
		// bytes depend on nothing but the fields above.
		Format: tar.FormatUSTAR,
	}
}
