package cmd

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRestConfigFollowsKUBECONFIG: without --kubeconfig, herald-dbg reaches
// the cluster $KUBECONFIG names, as kubectl does: the takeover steps of
// migrating-from-metallb.md run `herald-dbg migrate metallb ... --apply`
// next to kubectl, and failed wanting the Pod's service account.
func TestRestConfigFollowsKUBECONFIG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(unusedKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kubeconfig = ""
	cfg, err := restConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:1" {
		t.Errorf("host %q, want the one of $KUBECONFIG", cfg.Host)
	}
}
