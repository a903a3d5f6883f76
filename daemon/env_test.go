package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvironmentValueRefused: a value an option does not accept, given as
// an environment variable, stops the agent with a message naming the
// variable, as a bad ConfigMap key names the key.
func TestEnvironmentValueRefused(t *testing.T) {
	t.Setenv(EnvPrefix+"ENABLE_IPV6", "maybe")
	cmd := NewAgentCommand()
	cmd.SetArgs([]string{"--kubeconfig", "/nonexistent", "--dbg-socket", ""})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), EnvPrefix+"ENABLE_IPV6") {
		t.Fatalf("error %v, want one naming %sENABLE_IPV6", err, EnvPrefix)
	}
}

// TestEnvironmentBelowFlagsAndConfigDir: an environment variable sets an
// option the command line and the ConfigMap leave alone, and shows in the
// option values herald-dbg config prints.
func TestEnvironmentBelowFlagsAndConfigDir(t *testing.T) {
	t.Setenv(EnvPrefix+"K8S_CLIENT_QPS", "7")
	t.Setenv(EnvPrefix+"LOG_LEVEL", "debug")
	t.Setenv(EnvPrefix+"K8S_CLIENT_BURST", "9")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k8s-client-burst"), []byte("11\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := NewAgentCommand().Flags()
	if err := flags.Parse([]string{"--log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	if err := ApplyConfigDir(flags, dir); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(flags, EnvPrefix); err != nil {
		t.Fatal(err)
	}
	got := optionValues(flags)
	for key, want := range map[string]string{"k8s-client-qps": "7", "log-level": "warn", "k8s-client-burst": "11"} {
		if got[key] != want {
			t.Errorf("%s = %q, want %q", key, got[key], want)
		}
	}
}

// TestControlPlaneEnvironment: control-plane-vip reads HERALD_CP_ variables,
// not the agent's.
func TestControlPlaneEnvironment(t *testing.T) {
	t.Setenv(EnvPrefix+"FENCE_WINDOW", "1s")
	t.Setenv(ControlPlaneEnvPrefix+"READYZ_PERIOD", "250ms")
	flags := newControlPlaneCommand().Flags()
	if err := applyEnv(flags, ControlPlaneEnvPrefix); err != nil {
		t.Fatal(err)
	}
	got := optionValues(flags)
	if got["fence-window"] != "300ms" || got["readyz-period"] != "250ms" {
		t.Errorf("fence-window %q, readyz-period %q; want 300ms (HERALD_ is the agent's) and 250ms", got["fence-window"], got["readyz-period"])
	}
}
