package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestApplyConfigDir(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		args    []string
		wantQPS string
		wantErr string
	}{
		{name: "default", wantQPS: "5"},
		{name: "file over default", files: map[string]string{"k8s-client-qps": "50\n"}, wantQPS: "50"},
		{name: "flag over file", files: map[string]string{"k8s-client-qps": "50"}, args: []string{"--k8s-client-qps=7"}, wantQPS: "7"},
		{name: "configmap internals skipped", files: map[string]string{"..data": "x", "k8s-client-qps": "9"}, wantQPS: "9"},
		{name: "unknown key", files: map[string]string{"enable-foo": "true"}, wantErr: `unknown key "enable-foo"`},
		{name: "bad value", files: map[string]string{"k8s-client-qps": "fast"}, wantErr: `key "k8s-client-qps"`},
		{name: "library flag", files: map[string]string{"shell-sock-path": "/run/x.sock"}, wantErr: `unknown key "shell-sock-path"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for k, v := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			fs := pflag.NewFlagSet("", pflag.ContinueOnError)
			fs.Float32("k8s-client-qps", 5, "")
			fs.String("config-dir", "", "")
			fs.String("shell-sock-path", "", "") // hive's shell's, no option
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := ApplyConfigDir(fs, dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fs.Lookup("k8s-client-qps").Value.String(); got != tt.wantQPS {
				t.Fatalf("qps %s, want %s", got, tt.wantQPS)
			}
		})
	}
}
