package daemon

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cilium/hive/shell"
)

// hive's shell registers its own socket flag; the agent's socket is
// dbg-socket. shell-sock-path is no option: not in --help, refused on the
// command line and in the environment (and in the ConfigMap:
// TestApplyConfigDir), left out of the effective configuration.
func TestShellSockPathIsNoOption(t *testing.T) {
	cmd := NewAgentCommand()
	var help bytes.Buffer
	cmd.SetOut(&help)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(help.String(), "--dbg-socket") {
		t.Errorf("--help lacks --dbg-socket:\n%s", help.String())
	}
	if strings.Contains(help.String(), shell.ShellSockPathName) {
		t.Errorf("--help lists --%s:\n%s", shell.ShellSockPathName, help.String())
	}

	cmd = NewAgentCommand()
	cmd.SetArgs([]string{"--" + shell.ShellSockPathName + "=/run/x.sock"})
	if err := cmd.Execute(); err == nil || err.Error() != "unknown flag: --shell-sock-path" {
		t.Errorf("--shell-sock-path: %v, want unknown flag", err)
	}

	t.Setenv("HERALD_SHELL_SOCK_PATH", "/run/x.sock")
	cmd = NewAgentCommand()
	cmd.SetArgs([]string{})
	if err := cmd.Execute(); err == nil || err.Error() != "unknown option HERALD_SHELL_SOCK_PATH" {
		t.Errorf("HERALD_SHELL_SOCK_PATH: %v, want unknown option", err)
	}

	values := optionValues(NewAgentCommand().Flags())
	if _, ok := values[shell.ShellSockPathName]; ok {
		t.Errorf("the effective configuration has %s", shell.ShellSockPathName)
	}
	if values["dbg-socket"] != "/var/run/herald/herald.sock" {
		t.Errorf("dbg-socket = %q", values["dbg-socket"])
	}
}
