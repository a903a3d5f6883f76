package agentproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeAgent is a shell script standing in for herald-agent: it prints its
// arguments, then exits with status 3 if one of them is --fail, else runs
// until SIGTERM (then says "bye" and exits 0) or SIGKILL.
// The trap comes first: the test stops the fake as soon as it printed its
// arguments.
const fakeAgent = `#!/bin/sh
trap 'echo bye; exit 0' TERM
echo "args: $*"
for a in "$@"; do [ "$a" = --fail ] && exit 3; done
while :; do sleep 0.05; done
`

func newFake(t *testing.T) *Agent {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-agent")
	if err := os.WriteFile(bin, []byte(fakeAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	return New(Options{Name: "n1", Dir: filepath.Join(dir, "n1"), AgentBin: bin, Args: []string{"--base"}})
}

func waitExit(t *testing.T, a *Agent) error {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if exited, err := a.Exited(); exited {
			return err
		}
	}
	t.Fatal("the fake agent did not exit")
	return nil
}

func TestExtraArgsMarksAndExits(t *testing.T) {
	a := newFake(t)
	if a.LogPath() != "" || a.LogsSince(a.Mark()) != "" {
		t.Fatal("logs before the first start")
	}

	// Run 1: Options.Args only; stopped on purpose.
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	waitLog(t, a, "args: ")
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if exited, err := a.Exited(); !exited || err != nil {
		t.Fatalf("after Stop: exited %v, status %v; want exit status 0", exited, err)
	}
	mark := a.Mark()

	// Run 2: with extra flags, after Options.Args; it dies on its own.
	a.SetExtraArgs("--fail")
	if got := a.ExtraArgs(); len(got) != 1 || got[0] != "--fail" {
		t.Fatalf("ExtraArgs() = %q", got)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(t, a); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("exit status %v, want 3", err)
	}
	if msg := UnexpectedExits(a); !strings.HasPrefix(msg, "\nagent n1 exited unexpectedly") {
		t.Fatalf("UnexpectedExits = %q", msg)
	}

	since := a.LogsSince(mark)
	if strings.Contains(since, "bye") || !strings.Contains(since, "[run 2 of agent n1]\nargs: ") ||
		!strings.Contains(since, "--base --fail\n") {
		t.Errorf("LogsSince(mark after run 1) = %q; want run 2's log only, with --base --fail last", since)
	}
	all := a.LogsSince(LogMark{})
	if !strings.Contains(all, "[run 1 of agent n1]") || !strings.Contains(all, "bye") || !strings.HasSuffix(a.LogPath(), "agent-2.log") {
		t.Errorf("LogsSince(zero mark) = %q, LogPath %s; want both runs", all, a.LogPath())
	}

	// Run 3: extra flags cleared.
	a.SetExtraArgs()
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	waitLog(t, a, "args: ")
	if err := a.Kill9(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(a.LogPath()); strings.Contains(string(b), "--fail") {
		t.Errorf("run 3 got the cleared extra flags: %s", b)
	}
	if msg := UnexpectedExits(a); msg != "" {
		t.Errorf("UnexpectedExits after Kill9 = %q, want none", msg)
	}
}

func waitLog(t *testing.T, a *Agent, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(a.LogPath()); strings.Contains(string(b), s) {
			return
		}
	}
	t.Fatalf("no %q in %s", s, a.LogPath())
}

func TestTail(t *testing.T) {
	if got := Tail("a\nb\nc\n", 2); got != "[... 1 earlier lines]\nb\nc" {
		t.Errorf("Tail = %q", got)
	}
	if got := Tail("a\nb\n", 2); got != "a\nb" {
		t.Errorf("Tail = %q", got)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/sys/fs/bpf`:        "/sys/fs/bpf",
		`/tmp/a\040b`:        "/tmp/a b",
		`/tmp/tab\011x\134y`: "/tmp/tab\tx\\y",
		`/tmp/odd\04`:        `/tmp/odd\04`,
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
