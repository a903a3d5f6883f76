package cluster

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The scripts and this package each name the two versions; a bump in one
// place only would build one version and look for another.
func TestVersionsMatchScripts(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "install", "dev", "kube-versions.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"KUBE_VERSION": KubeVersion, "KUBE_OLDEST_VERSION": OldestKubeVersion} {
		m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindSubmatch(b)
		if m == nil {
			t.Errorf("kube-versions.sh sets no %s", name)
		} else if string(m[1]) != want {
			t.Errorf("kube-versions.sh: %s=%s, test/cluster says %s", name, m[1], want)
		}
	}
}

func TestKubeVersion(t *testing.T) {
	for _, tc := range []struct {
		name, opt, env, want string
		wantErr              bool
	}{
		{name: "default", want: KubeVersion},
		{name: "env", env: OldestKubeVersion, want: OldestKubeVersion},
		{name: "option wins over env", opt: KubeVersion, env: OldestKubeVersion, want: KubeVersion},
		{name: "unknown option", opt: "v1.30.0", wantErr: true},
		{name: "unknown env", env: "1.31", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvKubeVersion, tc.env)
			got, err := kubeVersion(Options{KubeVersion: tc.opt})
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("kubeVersion = %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
