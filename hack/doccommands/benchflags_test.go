package doccommands

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// benchFlags are the flags a test/bench/cmd binary defines with package
// flag, and whether each is a bool (which takes no separate value); nil
// when there is no such binary.
func benchFlags(t *testing.T, bin string) map[string]bool {
	dir := filepath.Join(root, "test", "bench", "cmd", bin)
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, path := range files {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "flag" {
				return true
			}
			for _, arg := range call.Args {
				if name, ok := stringValue(arg, nil); ok {
					out[name] = strings.HasPrefix(sel.Sel.Name, "Bool")
					break
				}
			}
			return true
		})
	}
	return out
}

var (
	benchBinary = regexp.MustCompile(`_output/bin/(bench-[a-z0-9-]+)\s(.*)`)
	// makeBenchFlags: the Makefile's default flags of a bench binary,
	// BENCH_FAILOVER_FLAGS for bench-failover.
	makeBenchFlags = regexp.MustCompile(`(?m)^BENCH_([A-Z0-9]+)_FLAGS\s*\?=(.*)$`)
)

// TestBenchFlags: the flags the docs, the Makefile and the scripts give the
// benchmark binaries (_output/bin/bench-*) are flags they have.
func TestBenchFlags(t *testing.T) {
	type use struct{ where, bin, args string }
	var uses []use
	for _, s := range append(snippets(t), scriptLines(t)...) {
		if m := benchBinary.FindStringSubmatch(s.text); m != nil {
			uses = append(uses, use{s.page, m[1], m[2]})
		}
	}
	for _, m := range makeBenchFlags.FindAllStringSubmatch(readFile(t, filepath.Join(root, "Makefile")), -1) {
		uses = append(uses, use{"Makefile", "bench-" + strings.ToLower(m[1]), m[2]})
	}
	if len(uses) < 8 {
		t.Fatalf("found only %d uses of the bench binaries; is the extraction broken?", len(uses))
	}
	for _, u := range uses {
		flags := benchFlags(t, u.bin)
		if flags == nil {
			t.Errorf("%s runs %s, which is no test/bench/cmd binary", u.where, u.bin)
			continue
		}
		words := shellWords(u.args)
		for i := 0; i < len(words); i++ {
			w := words[i]
			if w == "|" || w == ";" || w == "&&" || w == ">" {
				break
			}
			if !strings.HasPrefix(w, "-") || strings.HasPrefix(w, "$") {
				continue
			}
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			isBool, ok := flags[name]
			if !ok {
				t.Errorf("%s: %s has no flag -%s", u.where, u.bin, name)
				continue
			}
			if !isBool && !hasValue {
				i++ // its value
			}
		}
	}
}
