package cells_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCellsAskForTheKindsTheyRead: a cell that reads the table of a
// Kubernetes kind asks for its reflection itself (tables.Reflect,
// tables.ReflectIn), as Documentation/architecture.md says, rather than
// count on another cell of its feature asking: else it reads an empty
// table the day that cell stops asking.
func TestCellsAskForTheKindsTheyRead(t *testing.T) {
	names := tableNames(t, "../tables")
	maps.Copy(names, tableNames(t, "."))
	kinds, reads, asks := map[string]bool{}, map[string]map[string]bool{}, map[string]map[string]bool{}
	walkGo(t, ".", func(dir string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IndexListExpr: // k8sreflect.Def[K, Obj]: Obj is a kind's row
				if isSel(n.X, "k8sreflect", "Def") && len(n.Indices) == 2 {
					kinds[exprString(n.Indices[1])] = true
				}
			case *ast.IndexExpr: // statedb.Table[Obj]: read
				if isSel(n.X, "statedb", "Table") {
					add(reads, dir, exprString(n.Index))
				}
			case *ast.CallExpr: // tables.Reflect(names...), tables.ReflectIn(name, ns)
				if isSel(n.Fun, "tables", "Reflect") || isSel(n.Fun, "tables", "ReflectIn") {
					for _, a := range n.Args {
						add(asks, dir, exprString(a))
					}
				}
			case *ast.CompositeLit: // tables.Reflection{Table: name}, also in []tables.Reflection{{...}}
				if isSel(n.Type, "tables", "Reflection") {
					reflectionTable(asks, dir, n)
				}
				if at, ok := n.Type.(*ast.ArrayType); ok && isSel(at.Elt, "tables", "Reflection") {
					for _, e := range n.Elts {
						if lit, ok := e.(*ast.CompositeLit); ok && lit.Type == nil {
							reflectionTable(asks, dir, lit)
						}
					}
				}
			}
			return true
		})
	})
	if len(kinds) < 10 {
		t.Fatalf("only %d Kubernetes kinds found: the search misses some", len(kinds))
	}
	for _, dir := range slices.Sorted(maps.Keys(reads)) {
		for _, typ := range slices.Sorted(maps.Keys(reads[dir])) {
			if !kinds[typ] {
				continue
			}
			name, ok := names[typ]
			if !ok {
				t.Errorf("%s reads the kind %s, whose table's name constant was not found", dir, typ)
				continue
			}
			if !asks[dir][name] {
				t.Errorf("%s reads %s but does not ask for %s (tables.Reflect)", dir, typ, name)
			}
		}
	}
}

// tableNames maps the row type of a table created under root
// ("*tables.Service", or a feature's own "*demotables.Thing") to the
// constant it is named with ("tables.ServicesTableName").
func tableNames(t *testing.T, root string) map[string]string {
	out := map[string]string{}
	walkGo(t, root, func(_ string, f *ast.File) {
		pkg := f.Name.Name
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Type.Results == nil || len(fn.Type.Results.List) == 0 {
				continue
			}
			res, ok := fn.Type.Results.List[0].Type.(*ast.IndexExpr)
			if !ok || !isSel(res.X, "statedb", "RWTable") {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok && isSel(c.Fun, "statedb", "NewTable") && len(c.Args) > 1 {
					out["*"+pkg+"."+strings.TrimPrefix(exprString(res.Index), "*")] = pkg + "." + exprString(c.Args[1])
				}
				return true
			})
		}
	})
	return out
}

// walkGo parses every non-test Go file under root but cells/internal (the
// libraries, which no reflection concerns), by package directory.
func walkGo(t *testing.T, root string, visit func(dir string, f *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if strings.HasPrefix(dir, "internal/") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		visit(dir, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// reflectionTable records the Table of a tables.Reflection literal.
func reflectionTable(asks map[string]map[string]bool, dir string, lit *ast.CompositeLit) {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok && exprString(kv.Key) == "Table" {
			add(asks, dir, exprString(kv.Value))
		}
	}
}

func isSel(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

func add(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}
