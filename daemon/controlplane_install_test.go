package daemon

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
)

// The shell commands of control-plane-vip.md's "Install", run word for
// word (under a scratch root instead of /, systemctl left out) from a
// checkout, leave what the systemd unit and the static Pod run with: the
// binary where ExecStart runs it, the unit and the manifest in place, and
// a configuration directory the mode accepts, whose secret it can read.
func TestControlPlaneInstallSteps(t *testing.T) {
	root, checkout := t.TempDir(), t.TempDir()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "install"), filepath.Join(checkout, "install")); err != nil {
		t.Fatal(err)
	}
	// What make build leaves; only its place matters here.
	if err := os.MkdirAll(filepath.Join(checkout, "_output/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"herald-agent", "herald-dbg"} {
		if err := os.WriteFile(filepath.Join(checkout, "_output/bin", b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// What a node has before Herald: kubeadm's manifests, systemd's units.
	for _, d := range []string{"etc/kubernetes/manifests", "etc/systemd/system", "usr/local/bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "set -e\nsystemctl() { :; }\n"
	for _, line := range installCommands(t) {
		for _, dir := range []string{"/etc/", "/usr/local/bin/"} {
			line = strings.ReplaceAll(line, " "+dir, " "+root+dir)
		}
		script += line + "\n"
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = checkout
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Install commands fail: %v\n%s\n%s", err, out, script)
	}

	unitFlags := controlPlaneManifestFlags(t)[1]
	unit, _ := os.ReadFile(filepath.Join(controlPlaneInstall, "herald-control-plane-vip.service"))
	_, execStart, _ := strings.Cut(string(unit), "\nExecStart=")
	bin := strings.Fields(execStart)[0]
	if fi, err := os.Stat(filepath.Join(root, bin)); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("the unit runs %s, which the Install steps do not install executable: %v", bin, err)
	}
	for _, f := range []string{"etc/systemd/system/herald-control-plane-vip.service", "etc/kubernetes/manifests/herald-control-plane-vip.yaml"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("the Install steps do not put /%s in place: %v", f, err)
		}
	}
	dir := unitFlags.Lookup("config-dir").Value.String()
	flags := newControlPlaneCommand().Flags()
	if err := ApplyConfigDir(flags, filepath.Join(root, dir)); err != nil {
		t.Fatalf("the manifests' --config-dir=%s after the Install steps: %v", dir, err)
	}
	c := cpvipconfig.Defaults
	c.VIPs, _ = flags.GetStringSlice("vips")
	c.Peers, _ = flags.GetStringSlice("peers")
	c.NodeName, _ = flags.GetString("node-name")
	secret, _ := flags.GetString("peer-secret-file")
	c.PeerSecretFile = filepath.Join(root, secret)
	if _, err := c.Parse(); err != nil {
		t.Errorf("the configuration the Install steps write: %v", err)
	}
	if _, err := c.Secret(); err != nil {
		t.Errorf("the secret the Install steps write: %v", err)
	}
}

// installCommands are the lines of the sh blocks in control-plane-vip.md's
// "Install" section.
func installCommands(t *testing.T) []string {
	f, err := os.Open("../Documentation/control-plane-vip.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	section, block := false, false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Install"
		case section && line == "```sh":
			block = true
		case block && line == "```":
			block = false
		case block:
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		t.Fatal(`control-plane-vip.md's "Install" has no sh commands`)
	}
	return lines
}
