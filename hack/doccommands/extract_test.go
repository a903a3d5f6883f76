package doccommands

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository, seen from this package's directory.
const root = "../.."

// snippet is one piece of a page that reads as code: a code span or a line
// of a fenced block.
type snippet struct {
	page string
	text string
}

var (
	fence = regexp.MustCompile("(?ms)^\\s*```[a-z]*\\n(.*?)^\\s*```")
	span  = regexp.MustCompile("`([^`]+)`")
)

// docPages are the pages a user or developer reads commands from.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "Documentation", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no Documentation/*.md: %v", err)
	}
	return append(pages, filepath.Join(root, "README.md"),
		filepath.Join(root, "install", "helm", "herald", "templates", "NOTES.txt"))
}

// snippets returns every code span and fenced line of the pages. A span
// that a paragraph wraps over two lines is joined with a space, and a
// fenced line ending in a backslash with the next, as the shell would.
func snippets(t *testing.T) []snippet {
	t.Helper()
	var out []snippet
	for _, page := range docPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		text := string(b)
		if strings.HasSuffix(page, ".txt") {
			out = append(out, notesCommands(name, text)...)
			continue
		}
		for _, m := range fence.FindAllStringSubmatch(text, -1) {
			for _, line := range strings.Split(strings.ReplaceAll(m[1], "\\\n", " "), "\n") {
				out = append(out, snippet{name, line})
			}
		}
		for _, para := range strings.Split(fence.ReplaceAllString(text, ""), "\n\n") {
			joined := strings.Join(strings.Fields(para), " ")
			for _, m := range span.FindAllStringSubmatch(joined, -1) {
				out = append(out, snippet{name, m[1]})
			}
		}
	}
	return out
}

var (
	templateAction = regexp.MustCompile(`\{\{-? *(if|else|end)\b[^}]*\}\}`)
	templateValue  = regexp.MustCompile(`\{\{[^}]*\}\}`)
)

// notesCommands are the commands of the chart's NOTES.txt: its indented
// lines, with the template's conditions dropped and each value standing as
// VALUE.
func notesCommands(page, text string) []snippet {
	var out []snippet
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "  ") {
			line = templateAction.ReplaceAllString(line, "")
			line = templateValue.ReplaceAllString(line, "VALUE")
			out = append(out, snippet{page, strings.TrimSpace(line)})
		}
	}
	return out
}

// scriptLines are the lines of the Makefile and the scripts its targets
// run, continuations joined, with `go test` spelled as the docs spell it:
// what a target runs is what the docs say it runs.
func scriptLines(t *testing.T) []snippet {
	t.Helper()
	files := []string{filepath.Join(root, "Makefile")}
	for _, g := range []string{"hack/*.sh", "install/dev/*.sh"} {
		m, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	norm := strings.NewReplacer("\\\n", " ", "$(GO) test", "go test", "\"${GO}\" test", "go test", "$$", "$")
	var out []snippet
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, f)
		for _, line := range strings.Split(norm.Replace(string(b)), "\n") {
			out = append(out, snippet{name, line})
		}
	}
	return out
}

// shellWords splits a command line as the shell would, for what the docs
// print: single and double quotes, no expansion. It stops at a comment.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
