package plugin

import (
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

func TestQueueDel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		req      v1.DelRequest
		wantFile string // "" when refused
	}{
		{name: "containerd ID", req: v1.DelRequest{Attachment: v1.Attachment{ContainerID: "4f3c9a0b", IfName: "eth0"}, Pod: v1.PodRef{Namespace: "default", Name: "web-0"}},
			wantFile: "4f3c9a0b_eth0.json"},
		{name: "underscores and dots", req: v1.DelRequest{Attachment: v1.Attachment{ContainerID: "pod_a.1", IfName: "net1"}},
			wantFile: "pod_a.1_net1.json"},
		{name: "container ID with a slash", req: v1.DelRequest{Attachment: v1.Attachment{ContainerID: "../../etc", IfName: "eth0"}}},
		{name: "interface name with a slash", req: v1.DelRequest{Attachment: v1.Attachment{ContainerID: "a", IfName: "../x"}}},
		{name: "no container ID", req: v1.DelRequest{Attachment: v1.Attachment{IfName: "eth0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, err := queueDel(dir, tc.req)
			if tc.wantFile == "" {
				if err == nil {
					t.Fatalf("queued at %s", path)
				}
				if m, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(m) != 0 {
					t.Errorf("left %v", m)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(dir, v1.PendingDelDir, tc.wantFile); path != want {
				t.Errorf("queued at %s, want %s", path, want)
			}
			checkQueue(t, dir, &tc.req)
			// Again, with a newer Pod: the same file, rewritten.
			tc.req.Pod.UID = "uid-2"
			if _, err := queueDel(dir, tc.req); err != nil {
				t.Fatal(err)
			}
			checkQueue(t, dir, &tc.req)

			if err := dropPendingDel(dir, tc.req.Attachment); err != nil {
				t.Fatal(err)
			}
			checkQueue(t, dir, nil)
			if err := dropPendingDel(dir, tc.req.Attachment); err != nil {
				t.Errorf("dropping it twice: %v", err)
			}
		})
	}
}

// TestQueueDelPermissions: only root reads the queue (it names Pods).
func TestQueueDelPermissions(t *testing.T) {
	dir := t.TempDir()
	if _, err := queueDel(dir, v1.DelRequest{Attachment: v1.Attachment{ContainerID: "a", IfName: "eth0"}}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, v1.PendingDelDir))
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("%s has mode %o, want 700", v1.PendingDelDir, perm)
	}
}
