package realcluster

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/cgroups"
)

// killMountNS kills every process in the mount namespace bound at nsFile
// and waits until they are gone; nothing bound there is fine.
func killMountNS(nsFile string, within time.Duration) error {
	var st syscall.Stat_t
	if err := syscall.Stat(nsFile, &st); err != nil || !mounted(nsFile) {
		return nil
	}
	want := fmt.Sprintf("mnt:[%d]", st.Ino)
	return cgroups.KillAll("mount namespace "+nsFile, func() []int {
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
		return pids
	}, within)
}
