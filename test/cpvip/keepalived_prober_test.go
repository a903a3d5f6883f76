package cpvip

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProberScript runs the prober's shell loop on the host (no namespace
// needed) with a file's existence as the probe, and follows its verdicts:
// unhealthy at the start, healthy after rise successes, unhealthy after
// fall failures, healthy again.
func TestKeepalivedProberScript(t *testing.T) {
	dir := t.TempDir()
	verdict, healthy := filepath.Join(dir, "check"), filepath.Join(dir, "healthy")
	cmd := exec.Command("/bin/sh", "-c", proberScript, "keepalived-prober", verdict, "0.010", "2", "3", "/usr/bin/test", "-e", healthy)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Logf("prober's log:\n%s", log.String())
	})

	waitVerdict := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, _ := os.ReadFile(verdict)
			if string(b) == want+"\n" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("verdict %q, want %q", b, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitVerdict("1")
	if err := os.WriteFile(healthy, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitVerdict("0")
	if err := os.Remove(healthy); err != nil {
		t.Fatal(err)
	}
	waitVerdict("1")
	if err := os.WriteFile(healthy, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitVerdict("0")
	if _, err := os.Stat(verdict + ".tmp"); err == nil {
		t.Error("the verdict's temporary file is left over")
	}
}
