package plugin

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstallFile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing string // content of an earlier herald-ipam in dir; "" for none
		noDir    bool
		wantErr  bool
	}{
		{name: "fresh"},
		{name: "over an older plugin", existing: "old plugin"},
		{name: "no directory", noDir: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "herald-ipam-build")
			if err := os.WriteFile(src, []byte("#!new plugin"), 0o700); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if tc.noDir {
				dir = filepath.Join(dir, "missing")
			}
			if tc.existing != "" {
				if err := os.WriteFile(filepath.Join(dir, BinaryName), []byte(tc.existing), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			dst, err := installFile(src, dir)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("installed at %s", dst)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if dst != filepath.Join(dir, BinaryName) {
				t.Errorf("installed at %s", dst)
			}
			b, err := os.ReadFile(dst)
			if err != nil || string(b) != "#!new plugin" {
				t.Errorf("installed %q, %v", b, err)
			}
			if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("mode %v, %v; want 0755", fi.Mode(), err)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("directory holds %d files, want the plugin only", len(entries))
			}
		})
	}
}

func TestInstallMainUsage(t *testing.T) {
	for _, args := range [][]string{{"install"}, {"instal", "/opt/cni/bin"}, {"install", "a", "b"}, {"--help"}} {
		var out, errOut bytes.Buffer
		if code := InstallMain(args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and the usage", args, code, errOut.String())
		}
	}
}
