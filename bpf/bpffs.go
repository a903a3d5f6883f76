/*
Copyright The Herald Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package bpf

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// EnsureBPFFS makes sure path is on a bpf filesystem: if it is not, it
// creates the directory (when missing) and mounts a bpffs on it. Use it for
// /sys/fs/bpf, which is not mounted inside `ip netns exec` (that gives a fresh
// /sys) or in a container that did not bind-mount it. Needs CAP_SYS_ADMIN to
// mount.
func EnsureBPFFS(path string) error {
	path = filepath.Clean(path)
	onBPFFS, err := isBPFFS(path)
	if err == nil && onBPFFS {
		return nil
	}
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("bpf: creating bpffs mount point: %w", err)
	}
	if err := unix.Mount("bpf", path, "bpf", 0, ""); err != nil {
		return fmt.Errorf("bpf: mounting bpffs at %s: %w", path, err)
	}
	if onBPFFS, err = isBPFFS(path); err != nil {
		return err
	}
	if !onBPFFS {
		return fmt.Errorf("bpf: %s is not on bpffs after mounting it", path)
	}
	return nil
}

func isBPFFS(path string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		if os.IsNotExist(err) {
			return false, err
		}
		return false, fmt.Errorf("bpf: statfs %s: %w", path, err)
	}
	return uint32(st.Type) == unix.BPF_FS_MAGIC, nil
}

// ethtoolDriver returns the driver name of the interface (in the calling
// thread's network namespace), as `ethtool -i` shows it.
func ethtoolDriver(ifname string) (string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolDrvinfo(fd, ifname)
	if err != nil {
		return "", err
	}
	return unix.ByteSliceToString(info.Driver[:]), nil
}
