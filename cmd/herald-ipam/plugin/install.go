package plugin

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// BinaryName is the name the plugin is installed under: the "type" of the
// ipam section.
const BinaryName = "herald-ipam"

// InstallMain is `herald-ipam install DIR`: the DaemonSet's init container
// copies the plugin into the host's CNI bin directory with it. The image is
// distroless (no shell, no cp), so the plugin installs itself.
func InstallMain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 2 || args[0] != "install" {
		fmt.Fprintf(stderr, "usage: %s install DIR\n(copies this binary to DIR/%s; run without arguments it is a CNI plugin)\n", BinaryName, BinaryName)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "%s install: %v\n", BinaryName, err)
		return 1
	}
	dst, err := installFile(self, args[1])
	if err != nil {
		fmt.Fprintf(stderr, "%s install: %v\n", BinaryName, err)
		return 1
	}
	fmt.Fprintf(stdout, "installed %s\n", dst)
	return 0
}

// installFile copies src to dir/herald-ipam. The copy goes to a temporary
// file in dir that is renamed over the old plugin: a runtime starting the
// plugin meanwhile runs either the old one or the new one, never half a
// file, and the old binary being executed is no obstacle (writing into it
// would fail with "text file busy").
func installFile(src, dir string) (dst string, err error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	dst = filepath.Join(dir, BinaryName)
	tmp, err := os.CreateTemp(dir, "."+BinaryName+".tmp-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, in); err != nil {
		return "", err
	}
	if err = tmp.Chmod(0o755); err != nil {
		return "", err
	}
	if err = tmp.Sync(); err != nil {
		return "", err
	}
	if err = tmp.Close(); err != nil {
		return "", err
	}
	if err = os.Rename(tmp.Name(), dst); err != nil {
		return "", err
	}
	return dst, syncDir(dir)
}
