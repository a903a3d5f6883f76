// Package cells_test checks the house rules of cells/ from its imports.
package cells_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/heraldlb/herald/"

// The rules of cells/, as Documentation/architecture.md states them:
//   - a cell never imports another cell: it may import cells/internal
//     (libraries), the ground floor's configuration
//     (cells/ground/agentconfig), its own feature's configuration
//     (cells/<feature>/<feature>config) and libraries
//     (cells/<feature>/internal/...);
//   - a feature's group (cells/<feature>) imports its own cells only;
//   - nothing under cells/ imports daemon/.
func TestCellsImportNoOtherCell(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if why := forbidden(dir, p); why != "" {
				t.Errorf("%s imports %s: %s", path, p, why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// forbidden says why the package in dir (relative to cells/) may not
// import path, or "".
func forbidden(dir, path string) string {
	if strings.HasPrefix(path, module+"daemon") {
		return "cells never import daemon/"
	}
	other, ok := strings.CutPrefix(path, module+"cells/")
	if !ok || strings.HasPrefix(other, "internal/") || other == "ground/agentconfig" {
		return ""
	}
	feature, _, _ := strings.Cut(dir, "/")
	switch {
	case dir == ".":
		return ""
	case !strings.Contains(dir, "/") && strings.HasPrefix(other, feature+"/"):
		return "" // a feature's group wires its own cells
	case strings.HasPrefix(dir, "internal/") && strings.HasPrefix(other, "internal/"):
		return ""
	case other == feature+"/"+feature+"config" || strings.HasPrefix(other, feature+"/internal/"):
		return "" // the feature's own configuration and libraries
	case strings.HasPrefix(dir, other+"/") || dir == other:
		return "" // its own sub-packages
	case strings.HasPrefix(other, dir+"/"):
		return ""
	}
	return "a cell never imports another cell: share through tables/, ask through value groups"
}
