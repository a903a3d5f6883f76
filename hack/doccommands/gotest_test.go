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
)

// goTest is one `go test` command a page prints.
type goTest struct {
	page, text string
	run, bench string
	pkgs       []string
}

// goTests finds the `go test` commands in snippets, also those in a
// comment that says what a make target runs.
func goTests(snips []snippet) []goTest {
	var out []goTest
	for _, s := range snips {
		rest := s.text
		for {
			i := strings.Index(rest, "go test ")
			if i < 0 {
				break
			}
			rest = rest[i+len("go test "):]
			out = append(out, parseGoTest(s.page, rest))
		}
	}
	return out
}

func parseGoTest(page, cmd string) goTest {
	g := goTest{page: page, text: "go test " + cmd}
	words := shellWords(cmd)
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "|" || w == ";" || w == "&&" || w == "&" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if (name == "run" || name == "bench") && strings.HasPrefix(w, "-") {
			if !hasVal && i+1 < len(words) {
				i++
				val = words[i]
			}
			if name == "run" {
				g.run = val
			} else {
				g.bench = val
			}
			continue
		}
		if strings.HasPrefix(w, "./") {
			g.pkgs = append(g.pkgs, w)
		}
	}
	return g
}

// testFuncs are the top-level tests, benchmarks, fuzz tests and examples of
// a package (or of every package below it, for "./dir/..."), and the
// string literals of its test files, which name subtests.
type testFuncs struct {
	tests, benchmarks []string
	literals          []string
}

func loadTestFuncs(t *testing.T, pkg string) (testFuncs, bool) {
	var out testFuncs
	dir, recursive := strings.CutSuffix(pkg, "...")
	dir = filepath.Join(root, dir)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return out, false
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != dir && !recursive {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		out.add(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, true
}

func (tf *testFuncs) add(f *ast.File) {
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil {
			continue
		}
		switch n := fn.Name.Name; {
		case strings.HasPrefix(n, "Benchmark"):
			tf.benchmarks = append(tf.benchmarks, n)
		case strings.HasPrefix(n, "Test") || strings.HasPrefix(n, "Fuzz") || strings.HasPrefix(n, "Example"):
			tf.tests = append(tf.tests, n)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				tf.literals = append(tf.literals, strings.ReplaceAll(s, " ", "_"))
			}
		}
		return true
	})
}

// splitTop splits s at sep where it is outside brackets and parentheses,
// as go test splits a -run pattern into its levels.
func splitTop(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '\\':
			i++
		case sep:
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// checkPattern reports what of pattern names nothing: every alternative of
// its first level must match a function of the package, as `go test -list`
// would show; a later level that is a plain name must occur in a string of
// the package's tests (subtests are named at run time).
func checkPattern(pattern string, funcs, literals []string) []string {
	var missing []string
	levels := splitTop(pattern, '/')
	for _, alt := range splitTop(levels[0], '|') {
		re, err := regexp.Compile(alt)
		if err != nil {
			missing = append(missing, alt+" (not a regular expression: "+err.Error()+")")
			continue
		}
		if !anyMatch(re, funcs) {
			missing = append(missing, alt)
		}
	}
	for _, level := range levels[1:] {
		for _, alt := range splitTop(level, '|') {
			if plainName.MatchString(alt) && !anyContains(literals, alt) {
				missing = append(missing, "subtest "+alt)
			}
		}
	}
	return missing
}

func anyMatch(re *regexp.Regexp, names []string) bool {
	for _, n := range names {
		if re.MatchString(n) {
			return true
		}
	}
	return false
}

func anyContains(literals []string, s string) bool {
	for _, l := range literals {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// TestGoTestPatterns: every `go test -run X` or `-bench X` the docs print,
// and the Makefile and its scripts run, names tests or benchmarks that
// exist in the packages it names; a renamed test or benchmark would
// otherwise leave a command that silently runs nothing ("no tests to run"
// passes).
func TestGoTestPatterns(t *testing.T) {
	docs, scripts := goTests(snippets(t)), goTests(scriptLines(t))
	if len(docs) < 10 || len(scripts) < 5 {
		t.Fatalf("found only %d go test commands in the docs and %d in the Makefile and scripts; is the extraction broken?", len(docs), len(scripts))
	}
	for _, c := range docs {
		if len(c.pkgs) == 0 {
			t.Errorf("%s: %q names no package (./...)", c.page, c.text)
			continue
		}
		checkGoTest(t, c)
	}
	for _, c := range scripts {
		// Packages or patterns from a variable: the docs name their values.
		if len(c.pkgs) > 0 && !hasVariable(c.run) && !hasVariable(c.bench) {
			checkGoTest(t, c)
		}
	}
}

// hasVariable: a pattern a script builds from a variable ("^$" is none).
func hasVariable(pattern string) bool {
	return strings.Contains(strings.ReplaceAll(pattern, "^$", ""), "$")
}

func checkGoTest(t *testing.T, c goTest) {
	t.Helper()
	var tf testFuncs
	for _, p := range c.pkgs {
		one, ok := loadTestFuncs(t, p)
		if !ok {
			t.Errorf("%s: %q: no package %s", c.page, c.text, p)
		}
		tf.tests = append(tf.tests, one.tests...)
		tf.benchmarks = append(tf.benchmarks, one.benchmarks...)
		tf.literals = append(tf.literals, one.literals...)
	}
	if c.run != "" && c.run != "^$" {
		for _, m := range checkPattern(c.run, tf.tests, tf.literals) {
			t.Errorf("%s: %q: -run %s matches no test in %v", c.page, c.text, m, c.pkgs)
		}
	}
	if c.bench != "" {
		for _, m := range checkPattern(c.bench, tf.benchmarks, tf.literals) {
			t.Errorf("%s: %q: -bench %s matches no benchmark in %v", c.page, c.text, m, c.pkgs)
		}
	}
}
