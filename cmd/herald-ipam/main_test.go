package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bin is herald-ipam built from this package: these tests run it the way a
// runtime (or the init container) does, through skel.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "herald-ipam-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "herald-ipam")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cniError is the error a plugin prints on stdout.
type cniError struct {
	CNIVersion string `json:"cniVersion"`
	Code       uint   `json:"code"`
	Msg        string `json:"msg"`
}

func TestRunAsPlugin(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-agent.sock")
	conf := func(version, ipam string) string {
		return `{"cniVersion": "` + version + `", "name": "podnet", "type": "bridge", "ipam": {"type": "herald-ipam", "socket": "` + missing + `"` + ipam + `}}`
	}
	for _, tc := range []struct {
		name       string
		env        []string
		stdin      string
		wantExit   int
		wantCode   uint   // CNI error on stdout
		wantStdout string // part of stdout when no error
		wantStderr string
	}{
		{name: "no command: about", wantStderr: "herald-ipam: CNI IPAM plugin"},
		{name: "VERSION", env: []string{"CNI_COMMAND=VERSION"}, wantStdout: `"1.1.0"`},
		{name: "ADD without agent", env: []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=c1", "CNI_NETNS=/proc/1/ns/net", "CNI_IFNAME=eth0", "CNI_PATH=/opt/cni/bin",
			"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0"},
			stdin: conf("1.1.0", ""), wantExit: 1, wantCode: 11},
		{name: "ADD with a config typo", env: []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=c1", "CNI_NETNS=/proc/1/ns/net", "CNI_IFNAME=eth0", "CNI_PATH=/opt/cni/bin"},
			stdin: conf("1.1.0", `, "sockett": "/x"`), wantExit: 1, wantCode: 2},
		{name: "DEL without agent succeeds", env: []string{"CNI_COMMAND=DEL", "CNI_CONTAINERID=c1", "CNI_IFNAME=eth0", "CNI_PATH=/opt/cni/bin"},
			stdin: conf("1.1.0", `, "stateDir": "`+t.TempDir()+`"`), wantStderr: "queued"},
		{name: "GC needs CNI 1.1", env: []string{"CNI_COMMAND=GC", "CNI_PATH=/opt/cni/bin"},
			stdin: conf("1.0.0", ""), wantExit: 1, wantCode: 1},
		{name: "STATUS without agent", env: []string{"CNI_COMMAND=STATUS", "CNI_PATH=/opt/cni/bin"},
			stdin: conf("1.1.0", ""), wantExit: 1, wantCode: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin)
			cmd.Env = tc.env
			cmd.Stdin = strings.NewReader(tc.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			exit := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				exit = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if exit != tc.wantExit {
				t.Errorf("exit %d, want %d; stdout %s stderr %s", exit, tc.wantExit, &stdout, &stderr)
			}
			if tc.wantCode != 0 {
				var e cniError
				if err := json.Unmarshal(stdout.Bytes(), &e); err != nil || e.Code != tc.wantCode || e.Msg == "" {
					t.Errorf("stdout %s (%v), want CNI error %d", &stdout, err, tc.wantCode)
				}
			}
			if !strings.Contains(stdout.String(), tc.wantStdout) {
				t.Errorf("stdout %s, want %s in it", &stdout, tc.wantStdout)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %s, want %s in it", &stderr, tc.wantStderr)
			}
		})
	}
}

// TestInstall is the init container's `herald-ipam install DIR`.
func TestInstall(t *testing.T) {
	dir := t.TempDir()
	out, err := exec.Command(bin, "install", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want, _ := os.ReadFile(bin)
	got, err := os.ReadFile(filepath.Join(dir, "herald-ipam"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("installed copy differs from the binary (%v)", err)
	}
	// The copy is a working plugin.
	v, err := exec.Command(filepath.Join(dir, "herald-ipam")).CombinedOutput()
	if err != nil || !strings.Contains(string(v), "CNI protocol versions supported") {
		t.Errorf("installed copy: %v: %s", err, v)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"herald-ipam"}) {
		t.Errorf("directory holds %v", names)
	}
}
