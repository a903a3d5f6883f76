package realcluster

import (
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// kube-proxy's minSyncPeriod is written only when asked for, so the
// cluster runs kube-proxy's default unless a benchmark says otherwise.
func TestKubeProxyConfigMinSyncPeriod(t *testing.T) {
	n := &Node{Name: "node1", Dir: "/x"}
	for _, c := range []struct {
		minSync time.Duration
		want    any // iptables.minSyncPeriod; nil: no iptables section
	}{{0, nil}, {100 * time.Millisecond, "100ms"}} {
		var cfg map[string]any
		if err := yaml.UnmarshalStrict([]byte(kubeProxyConfig(n, c.minSync)), &cfg); err != nil {
			t.Fatalf("minSync %s: %v", c.minSync, err)
		}
		var got any
		if ipt, ok := cfg["iptables"].(map[string]any); ok {
			got = ipt["minSyncPeriod"]
		}
		if got != c.want {
			t.Errorf("minSync %s: iptables.minSyncPeriod %v, want %v", c.minSync, got, c.want)
		}
		if cfg["mode"] != "iptables" {
			t.Errorf("minSync %s: mode %v, want iptables", c.minSync, cfg["mode"])
		}
	}
}
