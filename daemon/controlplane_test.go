package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
)

const controlPlaneInstall = "../install/control-plane"

// The static Pod runs the mode with flags that exist, the example
// configuration parses, and every path it names is mounted.
func TestControlPlaneStaticPod(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(controlPlaneInstall, "herald-control-plane-vip.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(b, &pod); err != nil {
		t.Fatal(err)
	}
	if !pod.Spec.HostNetwork {
		t.Error("the static Pod must use the host's network: it answers ARP on the node's devices")
	}
	c := pod.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "control-plane-vip" {
		t.Fatalf("args %v do not start with control-plane-vip", c.Args)
	}
	cmd := newControlPlaneCommand()
	if err := cmd.Flags().Parse(c.Args[1:]); err != nil {
		t.Fatalf("args %v: %v", c.Args, err)
	}
	mounted := func(path string) bool {
		return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return path == m.MountPath || strings.HasPrefix(path, m.MountPath+"/")
		})
	}
	for _, flag := range []string{"config-dir", "dbg-socket"} {
		v, _ := cmd.Flags().GetString(flag)
		if !mounted(v) {
			t.Errorf("--%s=%s is on no volume of the Pod", flag, v)
		}
	}
	sysctl, _ := cmd.Flags().GetString("sysctl-dir")
	if !mounted(sysctl + "/net/ipv4") {
		t.Errorf("--sysctl-dir=%s: %s/net is on no volume of the Pod", sysctl, sysctl)
	}
	secret, err := os.ReadFile(filepath.Join(controlPlaneInstall, "config", "peer-secret-file"))
	if err != nil {
		t.Fatal(err)
	}
	if !mounted(strings.TrimSpace(string(secret))) {
		t.Errorf("the example's peer-secret-file %s is on no volume of the Pod", secret)
	}
	chart, err := os.ReadFile("../install/helm/herald/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(chart, &meta); err != nil {
		t.Fatal(err)
	}
	if want := "ghcr.io/heraldlb/herald:" + meta.AppVersion; c.Image != want {
		t.Errorf("image %s, want the chart's %s", c.Image, want)
	}
	if c.SecurityContext == nil || c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
		t.Error("the static Pod must run with capabilities, not privileged")
	}
}

// The example configuration directory is accepted as it is, by the
// mode's own parser, for each of its nodes.
func TestControlPlaneExampleConfig(t *testing.T) {
	cmd := newControlPlaneCommand()
	if err := ApplyConfigDir(cmd.Flags(), filepath.Join(controlPlaneInstall, "config")); err != nil {
		t.Fatal(err)
	}
	vips, _ := cmd.Flags().GetStringSlice("vips")
	peers, _ := cmd.Flags().GetStringSlice("peers")
	for _, p := range peers {
		name, _, _ := strings.Cut(p, "=")
		c := cpvipconfig.Defaults
		c.NodeName, c.VIPs, c.Peers = name, vips, peers
		if _, err := c.Parse(); err != nil {
			t.Errorf("node %s: %v", name, err)
		}
	}
}

// The systemd unit runs the mode with flags that exist.
func TestControlPlaneSystemdUnit(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(controlPlaneInstall, "herald-control-plane-vip.service"))
	if err != nil {
		t.Fatal(err)
	}
	_, exec, ok := strings.Cut(strings.ReplaceAll(string(b), "\\\n", " "), "\nExecStart=")
	if !ok {
		t.Fatal("no ExecStart")
	}
	exec, _, _ = strings.Cut(exec, "\n")
	args := strings.Fields(exec)
	if len(args) < 2 || args[1] != "control-plane-vip" {
		t.Fatalf("ExecStart %v does not run control-plane-vip", args)
	}
	if err := newControlPlaneCommand().Flags().Parse(args[2:]); err != nil {
		t.Fatalf("ExecStart %v: %v", args, err)
	}
}
