package cnitest

import (
	"os"
	"path/filepath"
)

// NodeNetwork is the pod network of a node as Herald's multi-pool mode
// sets it up: bridge cni0 (the agent puts each pod CIDR's gateway on it)
// with addresses from herald-ipam.
type NodeNetwork struct {
	Netns    string // the node's network namespace (a name under NetnsDir)
	IPAMBin  string // the herald-ipam binary to run
	Socket   string // where herald-ipam reaches the agent
	StateDir string // herald-ipam's state directory
	CacheDir string // libcni's cache; created
}

// Runtime is the node's container runtime on this network.
func (n NodeNetwork) Runtime() (*Runtime, error) {
	conf, err := BridgeNetwork{Bridge: "cni0", IsGateway: false, IPAM: map[string]any{"socket": n.Socket, "stateDir": n.StateDir}}.Conflist()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(n.CacheDir, 0o755); err != nil {
		return nil, err
	}
	return NewRuntime(RuntimeOptions{
		Conflist: conf, NodeNetns: filepath.Join(NetnsDir, n.Netns),
		PluginDirs: []string{PluginsDir(), filepath.Dir(n.IPAMBin)}, CacheDir: n.CacheDir,
	})
}
