package frr

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docsDir is the repository's Documentation, from this package.
const docsDir = "../../Documentation"

// routerBlocks returns the FRR configurations a document shows: its
// fenced blocks without a language whose first line is `router bgp` or
// `bfd`, each as its lines.
func routerBlocks(t *testing.T, doc string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(docsDir, doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks [][]string
	var cur []string
	in, lang := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```"):
			in, lang, cur = true, strings.TrimPrefix(line, "```"), nil
		case in && line == "```":
			in = false
			if lang == "" && len(cur) > 0 && (strings.HasPrefix(cur[0], "router bgp") || cur[0] == "bfd") {
				blocks = append(blocks, cur)
			}
		case in:
			cur = append(cur, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// definesPeerGroup: the block creates a peer group, which the other
// blocks' `neighbor GROUP ...` lines need first.
func definesPeerGroup(block []string) bool {
	return slices.ContainsFunc(block, func(l string) bool {
		f := strings.Fields(l)
		return len(f) == 3 && f[0] == "neighbor" && f[2] == "peer-group"
	})
}

// The FRR configurations Documentation/bgp.md shows are accepted by FRR
// as printed, pasted into vtysh's configuration mode one after the other
// (the one that defines the peer group first): no line is refused. The
// router only listens (a listen range, no neighbor address), so nothing
// is sent anywhere.
func TestDocumentedRouterConfigs(t *testing.T) {
	requireRoot(t)
	blocks := routerBlocks(t, "bgp.md")
	if len(blocks) < 2 {
		t.Fatalf("found %d FRR configurations in bgp.md, want the router's and the BFD one", len(blocks))
	}
	slices.SortStableFunc(blocks, func(a, b []string) int {
		switch {
		case definesPeerGroup(a) && !definesPeerGroup(b):
			return -1
		case definesPeerGroup(b) && !definesPeerGroup(a):
			return 1
		}
		return 0
	})
	lan := newLAN(t, "r1")
	h := lan.Host("r1")
	r := StartT(t, Options{Netns: h.Netns, Dir: filepath.Join(t.TempDir(), h.Name), Name: h.Name, BFD: true})
	for _, b := range blocks {
		if err := r.Configure(b...); err != nil {
			t.Errorf("bgp.md's configuration starting %q: %v", b[0], err)
		}
	}
}
