package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSpecConfigMaps: the ConfigMap blocks of the spec's L2 announcements
// page, as written there ({QPS} and {BURST} filled in), are accepted by
// --config-dir: kube-proxy-replacement among them, which configures
// Cilium's datapath and is accepted to change nothing.
func TestSpecConfigMaps(t *testing.T) {
	blocks := map[string]map[string]string{
		"configuration": {
			"enable-l2-announcements": "true",
			"kube-proxy-replacement":  "true",
			"k8s-client-qps":          "50",
			"k8s-client-burst":        "100",
		},
		"lease timings": {
			"enable-l2-announcements":         "true",
			"kube-proxy-replacement":          "true",
			"l2-announcements-lease-duration": "3s",
			"l2-announcements-renew-deadline": "1s",
			"l2-announcements-retry-period":   "200ms",
			"k8s-client-qps":                  "50",
			"k8s-client-burst":                "100",
		},
		"pod announcements": {
			"enable-l2-pod-announcements":    "true",
			"l2-pod-announcements-interface": "eth0",
		},
		// The Helm option externalIPs.enabled of the spec's prerequisites.
		"external IPs": {"enable-external-ips": "true"},
	}
	for name, keys := range blocks {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for k, v := range keys {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(v+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			flags := NewAgentCommand().Flags()
			if err := ApplyConfigDir(flags, dir); err != nil {
				t.Fatal(err)
			}
			for k, v := range keys {
				if got := flags.Lookup(k).Value.String(); got != v {
					t.Errorf("--%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}
