package doccommands

import (
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	dbg "github.com/heraldlb/herald/cmd/herald-dbg/cmd"
	"github.com/heraldlb/herald/daemon"
)

// invocations are the arguments of every `binary ...` the snippets run, up
// to the end of the command (a pipe, a redirection, a comment). The binary
// is a word of its own, not a flag's value (bench-e2e's -agent).
func invocations(snips []snippet, binary string) []snippet {
	var out []snippet
	for _, s := range snips {
		words := shellWords(s.text)
		for i, w := range words {
			if w != binary || i > 0 && strings.HasPrefix(words[i-1], "-") && words[i-1] != "--" {
				continue
			}
			var args []string
			for _, a := range words[i+1:] {
				if a == "|" || a == ";" || a == "&&" || a == "<" || a == ">" || a == "\\|" {
					break
				}
				args = append(args, a)
			}
			out = append(out, snippet{s.page, strings.Join(args, "\x00")})
		}
	}
	return out
}

// placeholder: an argument the docs leave for the reader (TABLE, NS/NAME,
// <table>, 'ENTRY').
var placeholder = regexp.MustCompile(`^(<.*>|[A-Z][A-Z/_]*|'[A-Z]+')$`)

// tableNames are the agent's statedb tables: the *TableName constants.
func tableNames(t *testing.T) map[string]bool {
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range []string{"tables", "cells"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			consts := map[string]string{}
			packageConsts(f, consts)
			for name, v := range consts {
				if strings.HasSuffix(name, "TableName") {
					out[v] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestDbgCommands: every `herald-dbg` command the docs print is one of its
// subcommands with flags it has, and every table `herald-dbg statedb`
// names is one of the agent's.
func TestDbgCommands(t *testing.T) {
	tables := tableNames(t)
	if !tables["l2-owners"] || !tables["lb-allocations"] {
		t.Fatalf("tables %v: no l2-owners or lb-allocations; is the search broken?", tables)
	}
	calls := invocations(snippets(t), "herald-dbg")
	if len(calls) < 30 {
		t.Fatalf("found only %d herald-dbg commands in the docs; is the extraction broken?", len(calls))
	}
	for _, c := range calls {
		cmd, pos, ok := checkCommand(t, c, func() *cobra.Command { return dbg.Root() })
		if ok && cmd.Name() == "statedb" && len(pos) > 0 && !placeholder.MatchString(pos[0]) && !tables[pos[0]] {
			t.Errorf("%s: %q: the agent has no table %s", c.page, "herald-dbg "+strings.ReplaceAll(c.text, "\x00", " "), pos[0])
		}
	}
}

// TestAgentCommands: every `herald-agent` command the docs print is one of
// its subcommands with flags it has (flags.md's table has its own test).
func TestAgentCommands(t *testing.T) {
	calls := invocations(snippets(t), "herald-agent")
	if len(calls) < 3 {
		t.Fatalf("found only %d herald-agent commands in the docs; is the extraction broken?", len(calls))
	}
	for _, c := range calls {
		checkCommand(t, c, daemon.NewAgentCommand)
	}
}

// checkCommand finds the subcommand an invocation runs and parses its
// flags, reporting what does not exist; it returns the subcommand and its
// positional arguments, ok when there is something to look at.
func checkCommand(t *testing.T, c snippet, newRoot func() *cobra.Command) (*cobra.Command, []string, bool) {
	t.Helper()
	// "..." elides the rest: check what comes before it.
	args, _, elided := strings.Cut(c.text, "...")
	if args = strings.TrimSuffix(args, "\x00"); args == "" {
		return nil, nil, false
	}
	words := strings.Split(args, "\x00")
	root := newRoot()
	shown := root.Name() + " " + strings.Join(words, " ")
	cmd, rest, err := root.Find(words)
	if err != nil {
		t.Errorf("%s: %q: %v", c.page, shown, err)
		return nil, nil, false
	}
	if elided && cmd == root {
		return nil, nil, false // "herald-dbg --socket ...": nothing to check
	}
	if err := cmd.ParseFlags(rest); errors.Is(err, pflag.ErrHelp) {
		return nil, nil, false
	} else if err != nil {
		t.Errorf("%s: %q: %v", c.page, shown, err)
		return nil, nil, false
	}
	pos := cmd.Flags().Args()
	if cmd.HasSubCommands() && len(pos) > 0 {
		t.Errorf("%s: %q: %s has no subcommand %s", c.page, shown, cmd.CommandPath(), pos[0])
		return nil, nil, false
	}
	return cmd, pos, true
}
