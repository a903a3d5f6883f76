package cells_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var metricName = regexp.MustCompile(`^herald_[a-z0-9_]+$`)

// codeMetrics returns the metric names the agent's code defines: string
// literals that are metric names, and the Name of an Opts literal that
// also sets Namespace (the ground metrics: herald_ + Name).
func codeMetrics(t *testing.T, root string) map[string]string {
	found := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && metricName.MatchString(s) {
					found[s] = path
				}
			case *ast.CompositeLit:
				if name := namespacedName(n); name != "" {
					found["herald_"+name] = path
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// namespacedName is the Name of a literal that sets both Namespace and
// Name (prometheus.*Opts with the herald namespace), else "".
func namespacedName(lit *ast.CompositeLit) string {
	var name string
	namespaced := false
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		switch key, _ := kv.Key.(*ast.Ident); {
		case key == nil:
		case key.Name == "Namespace":
			namespaced = true
		case key.Name == "Name":
			if b, ok := kv.Value.(*ast.BasicLit); ok {
				name, _ = strconv.Unquote(b.Value)
			}
		}
	}
	if !namespaced {
		return ""
	}
	return name
}

// docMetrics returns the herald_ metric names a page mentions; rowsOnly:
// only those that open a table row (metrics.md documents each in one).
func docMetrics(t *testing.T, page string, rowsOnly bool) map[string]bool {
	b, err := os.ReadFile(filepath.Join("..", "Documentation", page))
	if err != nil {
		t.Fatal(err)
	}
	pattern := "`(herald_[a-z0-9_]+)[`{]"
	if rowsOnly {
		pattern = "(?m)^\\| `(herald_[a-z0-9_]+)` \\|"
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

// TestMetricsDocumented: every metric the agent defines has its row in
// metrics.md (control-plane-vip's are named in control-plane-vip.md too,
// where its users look first), and every metric documented there exists.
func TestMetricsDocumented(t *testing.T) {
	code := codeMetrics(t, ".")
	docs := docMetrics(t, "metrics.md", true)
	cp := docMetrics(t, "control-plane-vip.md", false)
	for name, file := range code {
		isCP := strings.HasPrefix(name, "herald_control_plane_")
		if !docs[name] {
			t.Errorf("metric %s (%s) has no row in metrics.md", name, file)
		}
		if isCP && !cp[name] {
			t.Errorf("metric %s (%s) is not in control-plane-vip.md", name, file)
		}
	}
	for _, page := range []map[string]bool{docs, cp} {
		for name := range page {
			if _, ok := code[name]; !ok {
				t.Errorf("documented metric %s is defined nowhere in cells/", name)
			}
		}
	}
	// The scan must see the metrics named by Namespace + Name too.
	if _, ok := code["herald_build_info"]; !ok {
		t.Error("the scan missed herald_build_info: it no longer sees every metric")
	}
}
