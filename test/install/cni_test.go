package install

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/install/helm/helmrender"
)

// TestCNIInstall: with cni.install the DaemonSet copies herald-ipam into the
// host's CNI bin directory and shares the plugin's default socket and state
// directories (api/ipam/v1) with the host; without it, none of that.
func TestCNIInstall(t *testing.T) {
	for _, tc := range []struct {
		name        string
		set         []string
		wantInstall bool
		wantBinDir  string
		wantDbgDir  string // where the dbg socket's directory comes from: "emptyDir", "host" (the CNI run directory)
	}{
		{name: "defaults", wantDbgDir: "emptyDir"},
		{name: "install", set: []string{"cni.install=true"}, wantInstall: true, wantBinDir: "/opt/cni/bin", wantDbgDir: "host"},
		{name: "install into CRI-O's directory", set: []string{"cni.install=true", "cni.binDir=/usr/libexec/cni"},
			wantInstall: true, wantBinDir: "/usr/libexec/cni", wantDbgDir: "host"},
		{name: "install, dbg socket elsewhere", set: []string{"cni.install=true", "dbg.socket=/run/herald-dbg/dbg.sock"},
			wantInstall: true, wantBinDir: "/opt/cni/bin", wantDbgDir: "emptyDir"},
		{name: "install, no dbg socket", set: []string{"cni.install=true", "dbg.socket="},
			wantInstall: true, wantBinDir: "/opt/cni/bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, helmrender.Options{Set: tc.set})
			pod := r.daemonSet(t).Spec.Template.Spec
			cm := r.configMap(t)
			agent := pod.Containers[0]
			vols := map[string]corev1.Volume{}
			for _, v := range pod.Volumes {
				vols[v.Name] = v
			}
			hostPathAt := func(c corev1.Container, mountPath string) string {
				for _, m := range c.VolumeMounts {
					if m.MountPath == mountPath && vols[m.Name].HostPath != nil {
						return vols[m.Name].HostPath.Path
					}
				}
				return ""
			}

			// Every mount point once: the API server refuses duplicates.
			var paths []string
			for _, m := range agent.VolumeMounts {
				if slices.Contains(paths, m.MountPath) {
					t.Errorf("two mounts at %s", m.MountPath)
				}
				paths = append(paths, m.MountPath)
			}

			runDir, stateDir := filepath.Dir(v1.DefaultSocket), filepath.Dir(v1.DefaultStateDir)
			if !tc.wantInstall {
				if len(pod.InitContainers) != 0 {
					t.Errorf("init containers %v without cni.install", pod.InitContainers)
				}
				if p := hostPathAt(agent, stateDir); p != "" {
					t.Errorf("host's %s mounted without cni.install", p)
				}
				if m := hostPathAt(agent, runDir); m != "" {
					t.Errorf("host's %s mounted without cni.install", m)
				}
			} else {
				if len(pod.InitContainers) != 1 {
					t.Fatalf("%d init containers, want install-cni", len(pod.InitContainers))
				}
				ic := pod.InitContainers[0]
				if ic.Image != agent.Image {
					t.Errorf("install-cni runs %s, the agent %s", ic.Image, agent.Image)
				}
				if len(ic.Command) != 3 || ic.Command[0] != "herald-ipam" || ic.Command[1] != "install" {
					t.Fatalf("install-cni runs %q, want herald-ipam install DIR", ic.Command)
				}
				if got := hostPathAt(ic, ic.Command[2]); got != tc.wantBinDir {
					t.Errorf("install-cni installs into %s, which is the host's %q; want %s", ic.Command[2], got, tc.wantBinDir)
				}
				if sc := ic.SecurityContext; sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
					t.Errorf("install-cni security context %+v: want every capability dropped", sc)
				}
				// herald-ipam's defaults are in the host's directories.
				if got := hostPathAt(agent, runDir); got != runDir {
					t.Errorf("the agent's %s (socket %s) is %q, want the host's", runDir, v1.DefaultSocket, got)
				}
				if got := hostPathAt(agent, stateDir); got != stateDir || !strings.HasPrefix(v1.DefaultStateDir, stateDir+"/") {
					t.Errorf("the agent's %s (state %s) is %q, want the host's", stateDir, v1.DefaultStateDir, got)
				}
			}

			dbgDir := filepath.Dir(cm.Data["dbg-socket"])
			got := ""
			for _, m := range agent.VolumeMounts {
				if m.MountPath != dbgDir {
					continue
				}
				switch v := vols[m.Name]; {
				case v.EmptyDir != nil:
					got = "emptyDir"
				case v.HostPath != nil && v.HostPath.Path == runDir && tc.wantInstall:
					got = "host"
				default:
					got = "other"
				}
			}
			if cm.Data["dbg-socket"] == "" {
				dbgDir = ""
			}
			if got != tc.wantDbgDir {
				t.Errorf("dbg socket directory %q comes from %q, want %q", dbgDir, got, tc.wantDbgDir)
			}
		})
	}
}
