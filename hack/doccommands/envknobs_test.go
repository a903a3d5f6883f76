package doccommands

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

	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/daemon"
)

// envReaders are the functions that read an environment variable named by
// one of their arguments: the standard library's and the test suites'
// helpers (suite.EnvInt, test/l2's envInts and envDuration).
var envReaders = map[string]bool{"Getenv": true, "LookupEnv": true, "EnvInt": true, "envInts": true, "envDuration": true}

var (
	shellKnob = regexp.MustCompile(`\$\{([A-Z][A-Z0-9_]*):[-=]`)
	makeKnob  = regexp.MustCompile(`(?m)^([A-Z][A-Z0-9_]*)\s*\?=`)
	// docKnob: what the docs name as a knob of Herald's: HERALD_*, BENCH_*,
	// BENCH.
	docKnob = regexp.MustCompile(`\b(HERALD|BENCH)(_[A-Z0-9_]*[A-Z0-9])?\b`)
)

// codeKnobs are the environment variables the code reads, with where:
// Go's env readers called with a string literal or a package-level string
// constant, the scripts' ${VAR:-default} and the Makefile's VAR ?=.
func codeKnobs(t *testing.T) map[string]string {
	out := map[string]string{}
	goKnobs(t, out)
	var scripts []string
	for _, g := range []string{"hack/*.sh", "install/dev/*.sh", ".ci/run"} {
		m, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, m...)
	}
	for _, f := range scripts {
		for _, m := range shellKnob.FindAllStringSubmatch(readFile(t, f), -1) {
			out[m[1]] = rel(f)
		}
	}
	mk := filepath.Join(root, "Makefile")
	for _, m := range makeKnob.FindAllStringSubmatch(readFile(t, mk), -1) {
		out[m[1]] = "Makefile"
	}
	return out
}

func goKnobs(t *testing.T, out map[string]string) {
	fset := token.NewFileSet()
	var files []*ast.File
	consts := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Generated clients, build outputs, and this package,
			// whose tests name knobs to check them.
			switch rel(path) {
			case "_output", ".git", "api/client", "hack/doccommands":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, f)
		packageConsts(f, consts)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !envReaders[calleeName(call.Fun)] {
				return true
			}
			for _, arg := range call.Args {
				if name, ok := stringValue(arg, consts); ok {
					out[name] = rel(fset.Position(call.Pos()).Filename)
					break
				}
			}
			return true
		})
	}
}

// packageConsts records the package-level string constants of f by name.
func packageConsts(f *ast.File, consts map[string]string) {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i < len(vs.Values) {
					if s, ok := stringValue(vs.Values[i], nil); ok {
						consts[name.Name] = s
					}
				}
			}
		}
	}
}

func calleeName(fun ast.Expr) string {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// stringValue is a string literal's value, or that of a constant named by
// an identifier or a selector (pkg.Name).
func stringValue(e ast.Expr, consts map[string]string) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind == token.STRING {
			s, err := strconv.Unquote(v.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := consts[v.Name]
		return s, ok
	case *ast.SelectorExpr:
		s, ok := consts[v.Sel.Name]
		return s, ok
	}
	return "", false
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rel(path string) string {
	r, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

// optionVariables are the agent's and control-plane-vip's options as
// environment variables (flags.md, control-plane-vip.md): documented as
// options, read through the prefix.
func optionVariables() map[string]bool {
	out := map[string]bool{}
	add := func(prefix string, flags *pflag.FlagSet) {
		flags.VisitAll(func(f *pflag.Flag) {
			out[prefix+strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))] = true
		})
	}
	agent := daemon.NewAgentCommand()
	add(daemon.EnvPrefix, agent.Flags())
	for _, c := range agent.Commands() {
		if c.Name() == "control-plane-vip" {
			add(daemon.ControlPlaneEnvPrefix, c.Flags())
		}
	}
	return out
}

// TestEnvKnobsDocumented: every environment variable the code, the
// Makefile and the scripts read is named in the docs, and every HERALD_* or
// BENCH_* variable the docs name is read by something (or is an option's
// variable): a knob renamed on one side leaves a command that silently
// uses the default.
func TestEnvKnobsDocumented(t *testing.T) {
	pages := map[string]string{}
	var docs strings.Builder
	for _, page := range docPages(t) {
		pages[rel(page)] = readFile(t, page)
		docs.WriteString(pages[rel(page)])
	}
	text := docs.String()
	code := codeKnobs(t)
	if code["HERALD_KUBE_VERSION"] == "" || code["BENCH_L2_TRIALS"] == "" || code["HERALD_CACHE"] == "" {
		t.Fatalf("knobs found in the code: %v; is the search broken?", code)
	}
	for name, where := range code {
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(text) {
			t.Errorf("%s reads %s, which no page of Documentation/ or README.md names", where, name)
		}
	}
	options := optionVariables()
	if !options["HERALD_ENABLE_IPV6"] || !options["HERALD_CP_VIPS"] {
		t.Fatalf("option variables %v lack HERALD_ENABLE_IPV6 or HERALD_CP_VIPS", options)
	}
	for page, text := range pages {
		for _, name := range docKnob.FindAllString(text, -1) {
			if name != "HERALD" && code[name] == "" && !options[name] {
				t.Errorf("%s names %s, which nothing reads", page, name)
			}
		}
	}
}
