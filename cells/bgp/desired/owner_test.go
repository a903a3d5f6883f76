package desired

import (
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

// Two cluster configs select the node, both with an instance "main" (as
// Cilium's examples name it): only the owner's instances run, once, and
// the other's are not even listed (the node's CiliumBGPNodeConfig, keyed
// by instance name, could not hold both).
func TestDeriveOwner(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	older, newer := clusterConfig("zz-older", "pc"), clusterConfig("aa-newer", "pc")
	older.CreationTimestamp, newer.CreationTimestamp = t0, t0.Add(time.Hour)
	older.Instances[0].Peers[0].Name, newer.Instances[0].Peers[0].Name = "tor-older", "tor-newer"
	for _, tt := range []struct {
		name     string
		recorded string
		want     string // the one instance: "name/clusterConfig/peer"
	}{
		{"no owner yet: the oldest, though later by name", "", "main/zz-older/tor-older"},
		{"the node runs the newer: it keeps it", "aa-newer", "main/aa-newer/tor-newer"},
		{"the node runs one that is gone: the oldest", "gone", "main/zz-older/tor-older"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := inputs{
				self:           node("node1", nil, "198.18.0.11"),
				clusterConfigs: []*tables.BGPClusterConfig{newer, older},
				recordedOwner:  tt.recorded,
				peerConfigs:    map[string]*tables.BGPPeerConfig{"pc": peerConfig("pc", "")},
				readyHere:      func(string) bool { return false },
				served:         func(string) bool { return true },
			}
			instances, _, _ := derive(in)
			var got []string
			for _, i := range instances {
				line := i.Name + "/" + i.ClusterConfig
				for _, p := range i.Peers {
					line += "/" + p.Name
				}
				if i.Error != "" {
					line += " error: " + i.Error
				}
				got = append(got, line)
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("instances %q, want [%s]", got, tt.want)
			}
		})
	}
}
