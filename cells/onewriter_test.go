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

// sharedWriters are the tables more than one package of cells/ may write,
// and why: each entry is what Documentation/architecture.md says of it.
var sharedWriters = map[string]struct {
	writers []string
	why     string
}{
	"*tables.LBAllocation": {[]string{"lbipam/allocator", "lbipam/servicestatus"},
		"the service-status reconciler writes back the rows' reconciliation status"},
	"*tables.LBPoolStatus": {[]string{"lbipam/allocator", "lbipam/poolstatus"},
		"the pool-status reconciler writes back the rows' reconciliation status"},
	"*tables.L2AnnounceEntry": {[]string{"cpvip/election", "l2/elector", "l2/leaseelection", "l2/responder"},
		"one of the two L2 elections runs (cpvip/election in the control-plane hive); the responder's reconciler writes back the status"},
	"*tables.L2LeaseHealth": {[]string{"cpvip/election", "l2/elector", "l2/leaseelection"},
		"one of the two L2 elections runs (cpvip/election in the control-plane hive)"},
	"*tables.BGPInstance": {[]string{"bgp/desired", "cpvip/bgproutes"}, "cpvip/bgproutes runs in the control-plane hive, without bgp/desired"},
	"*tables.BGPRoute":    {[]string{"bgp/desired", "cpvip/bgproutes"}, "cpvip/bgproutes runs in the control-plane hive, without bgp/desired"},
}

// TestOneWriterPerTable: every table has one writer, the package that
// holds its statedb.RWTable (a cell, or a feature's kinds.go for the
// ground floor's reflectors), but for the shared writers above. Hive keeps
// a privately provided RWTable from other modules; this keeps the tables
// provided in the open from gaining writers nobody meant.
func TestOneWriterPerTable(t *testing.T) {
	writers := map[string]map[string]bool{} // table type -> packages
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if strings.HasPrefix(dir, "internal/") {
			return nil // libraries, called by the writers
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		provided := map[ast.Expr]bool{} // RWTable[T] in RWTable[T].ToTable: a provider, not a write
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "ToTable" {
				provided[sel.X] = true
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			ix, ok := n.(*ast.IndexExpr)
			if !ok || provided[ix] {
				return true
			}
			if sel, ok := ix.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "RWTable" {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "statedb" {
					typ := exprString(ix.Index)
					if writers[typ] == nil {
						writers[typ] = map[string]bool{}
					}
					writers[typ][dir] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range slices.Sorted(maps.Keys(writers)) {
		got := slices.Sorted(maps.Keys(writers[typ]))
		if len(got) == 1 {
			continue
		}
		if s, ok := sharedWriters[typ]; !ok || !slices.Equal(got, s.writers) {
			t.Errorf("table of %s is written by %v: one writer per table (or say why in sharedWriters and architecture.md)", typ, got)
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(sharedWriters)) {
		s := sharedWriters[typ]
		if got := slices.Sorted(maps.Keys(writers[typ])); !slices.Equal(got, s.writers) {
			t.Errorf("sharedWriters says %s is written by %v, but it is by %v", typ, s.writers, got)
		}
	}
	if len(writers) < 30 {
		t.Fatalf("only %d tables with a writer under cells/: the search misses some", len(writers))
	}
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return "?"
}
