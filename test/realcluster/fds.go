package realcluster

import (
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// A daemon gets its standard input, output and error, nothing else of
// the command that started it, as a service gets nothing of systemctl.
// Without this it kept every descriptor its starter had inherited: run
// under `flock LOCK make demo`, the cluster held the lock until make
// demo-down, and `flock LOCK make demo-down` waited for it forever.

var inheritedOnce sync.Once

// closeInheritedOnExec marks every descriptor above stderr close-on-exec.
// Go opens its own files that way already; what is left is what this
// process inherited (a lock, a pipe) and nothing here uses.
func closeInheritedOnExec() {
	inheritedOnce.Do(func() {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return
		}
		for _, e := range entries {
			if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
				// The directory's own descriptor is gone by now: EBADF.
				_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
			}
		}
	})
}
