package health

import (
	"errors"
	"slices"
	"testing"
)

func TestTree(t *testing.T) {
	root, tr := newRoot()
	lb := root.NewScope("lb-ipam")
	job := lb.NewScope("job-leader-election")
	job.OK("leading")
	dev := root.NewScope("devices")
	dev.Degraded("watch", errors.New("netlink: no buffer space"))

	lines, degraded := tr.snapshot()
	want := []string{
		"devices: Degraded watch: netlink: no buffer space",
		"lb-ipam.job-leader-election: OK leading",
	}
	if !slices.Equal(lines, want) || !degraded {
		t.Fatalf("got %q degraded=%v", lines, degraded)
	}
	dev.OK("synced")
	if _, degraded := tr.snapshot(); degraded {
		t.Fatal("still degraded after OK")
	}
	job.Close()
	if lines, _ := tr.snapshot(); len(lines) != 1 {
		t.Fatalf("closed scope still listed: %q", lines)
	}
}
