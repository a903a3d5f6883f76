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

func TestOlder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name string
		a, b Ref
		want bool
	}{
		{"created first", Ref{LBPool, "z", t0}, Ref{PodPool, "a", t0.Add(time.Second)}, true},
		{"created later", Ref{PodPool, "a", t0.Add(time.Second)}, Ref{LBPool, "z", t0}, false},
		{"same second, name first", Ref{LBPool, "a", t0}, Ref{PodPool, "b", t0}, true},
		{"same second, name later", Ref{PodPool, "b", t0}, Ref{LBPool, "a", t0}, false},
		{"same second and name: the pod pool", Ref{PodPool, "x", t0}, Ref{LBPool, "x", t0}, true},
		{"same second and name: not the LB pool", Ref{LBPool, "x", t0}, Ref{PodPool, "x", t0}, false},
		{"itself", Ref{LBPool, "x", t0}, Ref{LBPool, "x", t0}, false},
	}
	for _, c := range cases {
		if got := Older(c.a, c.b); got != c.want {
			t.Errorf("%s: Older(%v, %v) = %v, want %v", c.name, c.a, c.b, got, c.want)
		}
	}
}

func TestSame(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := Ref{LBPool, "x", t0.UTC()}
	if !a.Same(Ref{LBPool, "x", t0.Local()}) {
		t.Error("one instant in two locations is not the same")
	}
	for _, o := range []Ref{{PodPool, "x", t0}, {LBPool, "y", t0}, {LBPool, "x", t0.Add(time.Second)}} {
		if a.Same(o) {
			t.Errorf("%v is the same as %v", a, o)
		}
	}
}
