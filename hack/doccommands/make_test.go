package doccommands

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	makeRule   = regexp.MustCompile(`(?m)^([a-z0-9][a-z0-9-]*):([^=]|$)`)
	assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// makeTargets are the Makefile's rules.
func makeTargets(t *testing.T) map[string]bool {
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range makeRule.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

// madeTarget is the target of a snippet that runs make, after a prompt and
// the environment it sets ("BENCH=x make t"); "" for any other snippet.
func madeTarget(text string) string {
	words := shellWords(strings.TrimPrefix(strings.TrimSpace(text), "$ "))
	for len(words) > 0 && assignment.MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) < 2 || words[0] != "make" {
		return ""
	}
	for _, w := range words[1:] {
		if !strings.HasPrefix(w, "-") && !assignment.MatchString(w) {
			return w
		}
	}
	return ""
}

// TestMakeTargets: every `make TARGET` the docs print is a rule of the
// Makefile.
func TestMakeTargets(t *testing.T) {
	targets := makeTargets(t)
	if !targets["build"] || !targets["test-unit"] {
		t.Fatalf("Makefile rules %v: no build or test-unit; is the parsing broken?", targets)
	}
	found := 0
	for _, s := range snippets(t) {
		target := madeTarget(s.text)
		if target == "" {
			continue
		}
		found++
		if !targets[target] {
			t.Errorf("%s: %q: the Makefile has no target %s", s.page, s.text, target)
		}
	}
	if found < 10 {
		t.Fatalf("found only %d make commands in the docs; is the extraction broken?", found)
	}
}
