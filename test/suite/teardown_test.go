package suite

import (
	"slices"
	"testing"
)

func TestTeardownRunsLastFirstOnce(t *testing.T) {
	td := &Teardown{}
	var ran []int
	for i := range 3 {
		td.Add(func() { ran = append(ran, i) })
	}
	td.Run()
	td.Run()
	if want := []int{2, 1, 0}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
	td.Add(func() { ran = append(ran, 3) })
	td.Run()
	if want := []int{2, 1, 0, 3}; !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}
