package cmd

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/heraldlb/herald/cells/ground/dbgshell"
)

// TestShellCommand: `herald-dbg shell -- COMMAND` runs one of the agent's
// shell commands over herald-dbg's --socket and prints what it answers:
// statedb's db/show of a table the agent registers.
func TestShellCommand(t *testing.T) {
	db := agentDB(t, "--enable-l2-announcements")
	names := dbgshell.TableNames(db)
	insertZero(t, db, "services")
	serveShell(t, db)
	out, err := stdoutOf(t, func() error { _, err := dbgOut("shell", "--", "db/show", "services"); return err })
	if err != nil {
		t.Fatalf("herald-dbg shell -- db/show services: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Name") {
		t.Fatalf("herald-dbg shell -- db/show services printed no table header:\n%s", out)
	}
	out, _ = stdoutOf(t, func() error { _, err := dbgOut("shell", "--", "db"); return err })
	for _, name := range names {
		if !strings.Contains(out, name) {
			t.Errorf("herald-dbg shell -- db does not list table %s:\n%s", name, out)
		}
	}
}

// stdoutOf runs f and returns what it wrote to the process's standard
// output: hive's shell client writes the agent's answers there, as a
// terminal shows them, not to the command's writer.
func stdoutOf(t *testing.T, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	err = f()
	os.Stdout = saved
	w.Close()
	return <-done, err
}
