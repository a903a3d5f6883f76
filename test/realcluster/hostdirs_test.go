package realcluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestMountPointsLeaveTheHostAsTheyFoundIt(t *testing.T) {
	host := t.TempDir()
	at := func(p string) string { return filepath.Join(host, p) }
	// The host has /etc and /run/netns already; nothing else.
	for _, d := range []string{"/etc", "/run/netns"} {
		if err := os.MkdirAll(at(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{at("/etc/cni/net.d"), at("/opt/cni/bin"), at("/run/netns"), at("/var/lib/kubelet"), at("/var/lib/cni"), at("/etc/herald")}
	made, err := makeMountPoints(paths)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			t.Errorf("%s: no directory after makeMountPoints: %v", p, err)
		}
	}
	want := []string{at("/etc/cni"), at("/etc/cni/net.d"), at("/opt"), at("/opt/cni"), at("/opt/cni/bin"), at("/var"), at("/var/lib"), at("/var/lib/kubelet"), at("/var/lib/cni"), at("/etc/herald")}
	if !slices.Equal(made, want) {
		t.Errorf("made %q, want %q (what existed is not the cluster's to remove)", made, want)
	}
	// Meanwhile someone installs a CNI plugin of their own: it stays.
	if err := os.WriteFile(at("/opt/cni/bin/theirs"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := removeMountPoints(made); err != nil {
		t.Fatal(err)
	}
	var left []string
	_ = filepath.WalkDir(host, func(p string, _ os.DirEntry, _ error) error {
		left = append(left, p[len(host):])
		return nil
	})
	wantLeft := []string{"", "/etc", "/opt", "/opt/cni", "/opt/cni/bin", "/opt/cni/bin/theirs", "/run", "/run/netns"}
	if !slices.Equal(left, wantLeft) {
		t.Errorf("left on the host %q, want %q", left, wantLeft)
	}
	// Down may run twice (make demo-down after a failed Up): still fine.
	if err := removeMountPoints(made); err != nil {
		t.Errorf("second removal: %v", err)
	}
}
