package daemon

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/dbgshell"
)

// docOption is one option as a Documentation page's table lists it.
type docOption struct {
	name string
	// def is the documented default when the table gives it as a literal
	// (`15s`); descriptive defaults ("*(off)*", "every device …") are "".
	def     string
	literal bool
	// asAgent: "as for the agent", the default is herald-agent's.
	asAgent bool
}

var (
	backticked = regexp.MustCompile("`([^`]*)`")
	// allLiteral: a cell made only of backticked values, comma-separated.
	allLiteral = regexp.MustCompile("^`[^`]*`(, `[^`]*`)*$")
)

// docOptions reads the "| option | default | meaning |" tables of page,
// only those below the heading underHeading when it is not empty.
func docOptions(t *testing.T, page, underHeading string) []docOption {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "Documentation", page))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docOption
	inSection, inTable := underHeading == "", false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") && underHeading != "" {
			inSection = strings.TrimLeft(line, "# ") == underHeading
		}
		if strings.HasPrefix(line, "| option | default | meaning |") {
			inTable = inSection
			continue
		}
		if !strings.HasPrefix(line, "|") {
			inTable = false
		}
		if inTable && strings.HasPrefix(line, "| `") {
			out = append(out, parseOptionRow(t, line)...)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no option table in %s", page)
	}
	return out
}

// parseOptionRow splits one table row into its options: a row may name
// several, with as many literal defaults or none.
func parseOptionRow(t *testing.T, line string) []docOption {
	// No cell of these tables holds a "|" of its own.
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	if len(cells) < 3 {
		t.Fatalf("option row without three cells: %s", line)
	}
	names := backticked.FindAllStringSubmatch(cells[0], -1)
	def := strings.TrimSpace(cells[1])
	var defs [][]string
	if allLiteral.MatchString(def) {
		defs = backticked.FindAllStringSubmatch(def, -1)
		if len(defs) != len(names) {
			t.Fatalf("row names %d options but %d defaults: %s", len(names), len(defs), line)
		}
	}
	var out []docOption
	for i, n := range names {
		o := docOption{name: n[1], asAgent: strings.Contains(cells[2], "as for the agent")}
		if defs != nil {
			o.def, o.literal = defs[i][1], true
		}
		out = append(out, o)
	}
	return out
}

// commandOptions are a command's flags that are options: not help, nor the
// library flags the agent refuses.
func commandOptions(flags *pflag.FlagSet) map[string]*pflag.Flag {
	out := map[string]*pflag.Flag{}
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !slices.Contains(dbgshell.LibraryFlags, f.Name) {
			out[f.Name] = f
		}
	})
	return out
}

// sameDefault compares a documented literal default with a flag's, as
// values: `1m` is the duration 1m0s.
func sameDefault(f *pflag.Flag, doc string) bool {
	if f.Value.Type() == "duration" {
		a, errA := time.ParseDuration(doc)
		b, errB := time.ParseDuration(f.DefValue)
		return errA == nil && errB == nil && a == b
	}
	return f.DefValue == doc
}

// emptyDefault: a flag whose default is no value, which a descriptive
// cell ("*(off)*", "every device …", an empty cell) can stand for.
func emptyDefault(f *pflag.Flag) bool {
	return slices.Contains([]string{"", "[]"}, f.DefValue)
}

// checkOptions compares the options a page documents with a command's.
func checkOptions(t *testing.T, page string, docs []docOption, flags, agent map[string]*pflag.Flag) {
	seen := map[string]bool{}
	for _, o := range docs {
		seen[o.name] = true
		f, ok := flags[o.name]
		switch {
		case !ok:
			t.Errorf("%s documents option %q, which the command does not have", page, o.name)
		case o.literal && !sameDefault(f, o.def):
			t.Errorf("%s: %s defaults to %q, the command to %q", page, o.name, o.def, f.DefValue)
		case !o.literal && o.asAgent && f.DefValue != agent[o.name].DefValue:
			t.Errorf("%s: %s is \"as for the agent\", but defaults to %q, the agent's to %q", page, o.name, f.DefValue, agent[o.name].DefValue)
		case !o.literal && !o.asAgent && !emptyDefault(f):
			t.Errorf("%s: %s has no literal default, but the command's is %q", page, o.name, f.DefValue)
		}
	}
	for name := range flags {
		if !seen[name] {
			t.Errorf("option %q is not in %s", name, page)
		}
	}
}

// TestFlagsDocumented: every option of herald-agent is in flags.md with its
// default, and every option there exists; the same for control-plane-vip
// and its Options section. Users read defaults there, not in --help.
func TestFlagsDocumented(t *testing.T) {
	agent := commandOptions(NewAgentCommand().Flags())
	checkOptions(t, "flags.md", docOptions(t, "flags.md", ""), agent, agent)
	cp := commandOptions(newControlPlaneCommand().Flags())
	checkOptions(t, "control-plane-vip.md", docOptions(t, "control-plane-vip.md", "Options"), cp, agent)
}
