package dev_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The demos show each command before they run it (demo-lib.sh), for users
// to paste into their own shell: what is shown must be that command.

// demoLib runs script in bash after sourcing demo-lib.sh.
func demoLib(t *testing.T, script string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "set -euo pipefail; source ./demo-lib.sh; "+script)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// shown is the command a demo showed: the first line of out, after "$ ".
func shown(t *testing.T, out string) string {
	t.Helper()
	first, _, _ := strings.Cut(out, "\n")
	cmd, ok := strings.CutPrefix(first, "$ ")
	if !ok {
		t.Fatalf("the first line shows no command: %q", out)
	}
	return cmd
}

func TestRunShowsWhatAShellRuns(t *testing.T) {
	// The arguments the demos pass: jsonpath with spaces, braces and
	// quotes, a label selector with parentheses, IPv6 URLs, an empty word.
	args := `'{.status.conditions[0].reason}: {.status.conditions[0].message}{"\n"}' ` +
		`app 'in (web,green)' "it's" '' 'http://[fd00:18:17::]/' --max-time 2 'show ip route 198.18.17.0/32' '$HOME' '*'`
	out, err := demoLib(t, `run printf '<%s>\n' `+args)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	cmd := shown(t, out)
	pasted, err := exec.Command("bash", "-c", cmd).CombinedOutput()
	if err != nil {
		t.Fatalf("the shown command %q fails in bash: %v\n%s", cmd, err, pasted)
	}
	_, ran, _ := strings.Cut(out, "\n")
	if string(pasted) != ran {
		t.Errorf("the shown command %q prints\n%s\nthe demo's ran and printed\n%s", cmd, pasted, ran)
	}
}

func TestRunShowsPlainWordsUnquoted(t *testing.T) {
	out, err := demoLib(t, `run true kubectl -n kube-system get pods -o wide --timeout=20s svc/web`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if want := "true kubectl -n kube-system get pods -o wide --timeout=20s svc/web"; shown(t, out) != want {
		t.Errorf("shown %q, want %q", shown(t, out), want)
	}
}

func TestMustRetriesUntilTheCommandSucceeds(t *testing.T) {
	// The command fails twice, then succeeds: the demo goes on.
	dir := t.TempDir()
	out, err := demoLib(t, `must bash -c 'n=$(cat `+dir+`/n 2>/dev/null || echo 0); echo $((n+1)) >`+dir+`/n; ((n >= 2)) && echo done'; echo after`)
	if err != nil {
		t.Fatalf("must: %v\n%s", err, out)
	}
	for _, want := range []string{"done\n", "(succeeded on try 3)\n", "after\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestMustFailsTheDemoNamingTheCommand(t *testing.T) {
	out, err := demoLib(t, `must sh -c 'echo no route; exit 3'; echo after`, "MUST_TIMEOUT=1")
	if err == nil {
		t.Fatalf("the demo went on after a command that never succeeded:\n%s", out)
	}
	if strings.Contains(out, "after") {
		t.Errorf("the demo ran on after the failure:\n%s", out)
	}
	for _, want := range []string{"no route\n", `demo FAILED: "sh -c echo no route; exit 3" did not succeed`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestUntilOKShowsItsTextNotTheShellFunction(t *testing.T) {
	out, err := demoLib(t, `three_sessions() { true; }; until_ok "three sessions Established" three_sessions`)
	if err != nil {
		t.Fatalf("until_ok: %v\n%s", err, out)
	}
	if out != "# three sessions Established\n" {
		t.Errorf("until_ok printed %q, want only its text", out)
	}
	out, err = demoLib(t, `until_ok "three sessions Established" false`, "MUST_TIMEOUT=1")
	if err == nil || !strings.Contains(out, `demo FAILED: "three sessions Established"`) {
		t.Errorf("a check that never passes: err %v, output\n%s", err, out)
	}
}

func TestCloseInheritedFDs(t *testing.T) {
	// The demo inherits a lock (flock's) as descriptor 3; what it starts
	// in the background must not hold it, and the script goes on.
	lock, err := os.Create(filepath.Join(t.TempDir(), "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	cmd := exec.Command("bash", "-c", `set -euo pipefail; source ./demo-lib.sh
[[ -e /proc/$$/fd/3 ]] || { echo "no descriptor 3 to begin with"; exit 1; }
close_inherited_fds
sleep 0.5 &
readlink /proc/$!/fd/* || true
echo went on`)
	cmd.ExtraFiles = []*os.File{lock}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(string(out), lock.Name()) {
		t.Errorf("the background process holds the inherited %s:\n%s", lock.Name(), out)
	}
	if !strings.HasSuffix(string(out), "went on\n") {
		t.Errorf("the script did not go on after close_inherited_fds:\n%s", out)
	}
}
