package poolorder

import (
	"slices"
	"testing"
	"time"
)

func TestSorted(t *testing.T) {
	type pool struct {
		name    string
		created time.Time
	}
	t0 := time.Unix(1000, 0)
	pools := map[string]pool{
		"b":   {"b", t0},
		"a":   {"a", t0},
		"old": {"old", t0.Add(-time.Hour)},
		"new": {"new", t0.Add(time.Hour)},
	}
	got := Sorted(make([]pool, 1), pools, func(p pool) (time.Time, string) { return p.created, p.name })
	var names []string
	for _, p := range got {
		names = append(names, p.name)
	}
	if want := []string{"old", "a", "b", "new"}; !slices.Equal(names, want) {
		t.Fatalf("order %v, want %v", names, want)
	}
}
