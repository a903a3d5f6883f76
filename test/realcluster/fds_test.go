package realcluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A descriptor this process inherited (here: made inheritable by hand,
// as flock's lock is) does not reach a daemon.
func TestDaemonGetsNoInheritedDescriptor(t *testing.T) {
	dir := t.TempDir()
	lock, err := os.Create(filepath.Join(dir, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := unix.FcntlInt(lock.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	d := daemon{name: "sleeper", dir: dir, argv: []string{"sleep", "60"}}
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.stop(5 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	pid, ok := d.pid()
	if !ok {
		t.Fatalf("the daemon does not run; its log:\n%s", tailFile(d.Log(), 10))
	}
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	var fds []string
	held := false
	for _, e := range entries {
		target, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + e.Name())
		fds = append(fds, e.Name()+" -> "+target)
		held = held || target == lock.Name()
	}
	if held {
		t.Errorf("the daemon holds the starter's descriptor of %s:\n%s", lock.Name(), strings.Join(fds, "\n"))
	}
}
