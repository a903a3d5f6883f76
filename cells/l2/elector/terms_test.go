package elector

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

func TestTermsSeen(t *testing.T) {
	s := termsSeen{}
	s.observe("node1", "")
	s.observe("node1", "a")
	s.observe("node2", "x")
	s.observe("node1", "b")
	s.observe("node1", "a") // a late echo of an older term: nothing new
	want := []string{"node1/a", "node1/b", "node2/x"}
	if got := slices.Sorted(maps.Keys(s.keys())); !slices.Equal(got, want) {
		t.Fatalf("keys = %v, want %v", got, want)
	}

	for i := range maxSeenTerms + 3 {
		s.observe("node3", fmt.Sprint("t", i))
	}
	if n := len(s["node3"]); n != maxSeenTerms {
		t.Fatalf("node3 remembers %d terms, want %d", n, maxSeenTerms)
	}
	keys := s.keys()
	if keys["node3/t0"] || !keys[fmt.Sprint("node3/t", maxSeenTerms+2)] {
		t.Fatalf("the oldest terms are forgotten first: %v", s["node3"])
	}
}
