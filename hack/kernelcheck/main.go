// Command kernelcheck is PID 1 of the virtual machine hack/kernel-check.sh
// boots on another kernel: it mounts what the tests of the bpf package
// need, runs the ones that load and run the responder programs
// (BPF_PROG_TEST_RUN, maps, pinning; no network devices), prints one
// verdict line and powers the machine off.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

func main() {
	for _, m := range []struct{ src, dir, fstype string }{
		{"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"}, {"devtmpfs", "/dev", "devtmpfs"},
		{"tmpfs", "/tmp", "tmpfs"}, {"bpf", "/sys/fs/bpf", "bpf"},
	} {
		_ = os.MkdirAll(m.dir, 0o755)
		if err := unix.Mount(m.src, m.dir, m.fstype, 0, ""); err != nil {
			fmt.Printf("kernelcheck: mounting %s: %v\n", m.dir, err)
		}
	}
	var u unix.Utsname
	_ = unix.Uname(&u)
	release := strings.TrimRight(string(u.Release[:]), "\x00")
	cmd := exec.Command("/bpf.test", "-test.v", "-test.count=1", "-test.run", os.Getenv("KERNELCHECK_RUN"))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	cmd.Env = append(os.Environ(), "TMPDIR=/tmp", "HOME=/tmp")
	verdict := "PASS"
	if err := cmd.Run(); err != nil {
		verdict = "FAIL: " + err.Error()
	}
	fmt.Printf("KERNELCHECK %s %s\n", release, verdict)
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
}
