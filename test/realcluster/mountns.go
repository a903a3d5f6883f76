package realcluster

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// killMountNS kills every process in the mount namespace bound at nsFile
// and waits until they are gone; nothing bound there is fine.
func killMountNS(nsFile string, within time.Duration) error {
	var st syscall.Stat_t
	if err := syscall.Stat(nsFile, &st); err != nil || !mounted(nsFile) {
		return nil
	}
	want := fmt.Sprintf("mnt:[%d]", st.Ino)
	deadline := time.Now().Add(within)
	for {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && ns == want && processRuns(pid) {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mount namespace %s: processes %v do not go", nsFile, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
