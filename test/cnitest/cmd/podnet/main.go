// Command podnet does what a container runtime does for a Pod's network,
// for `make demo` (which has no kubelet): it creates the Pod's network
// namespace and runs ADD, or DEL and removes the namespace, through libcni
// and the real plugins (test/cnitest), with the plugins running in the
// node's network namespace.
//
//	podnet add|del --node-netns NS --conflist F --socket S --state-dir D \
//	    --cache DIR --pod NAMESPACE/NAME --uid UID --netns NAME
//
// The ipam section of the conflist gets the agent's socket and state
// directory (herald-ipam's "socket" and "stateDir"). ADD prints the CNI
// result.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heraldlb/herald/test/cnitest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "podnet:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 || (os.Args[1] != "add" && os.Args[1] != "del") {
		return fmt.Errorf("usage: podnet add|del [flags] (-h for the flags)")
	}
	op := os.Args[1]
	fs := flag.NewFlagSet("podnet "+op, flag.ExitOnError)
	nodeNetns := fs.String("node-netns", "", "the node's network namespace (name): where the plugins run")
	conflist := fs.String("conflist", "install/cni/10-herald.conflist", "the network configuration list")
	socket := fs.String("socket", "", "the agent's --ipam-socket")
	stateDir := fs.String("state-dir", "", "the agent's --ipam-state-dir")
	cache := fs.String("cache", "", "libcni's cache directory for this node")
	pod := fs.String("pod", "", "the Pod, NAMESPACE/NAME")
	uid := fs.String("uid", "", "the Pod's UID")
	netns := fs.String("netns", "", "the Pod's network namespace (name), created by add")
	pluginDir := fs.String("plugin-dir", "_output/bin", "where herald-ipam is (the reference plugins come from the herald cache)")
	_ = fs.Parse(os.Args[2:])
	ns, name, ok := strings.Cut(*pod, "/")
	if *nodeNetns == "" || *socket == "" || *stateDir == "" || *cache == "" || !ok || *netns == "" {
		return fmt.Errorf("--node-netns, --socket, --state-dir, --cache, --pod NAMESPACE/NAME and --netns are needed")
	}
	conf, err := withIPAM(*conflist, *socket, *stateDir)
	if err != nil {
		return err
	}
	plugins, err := cnitest.RequirePlugins()
	if err != nil {
		return err
	}
	herald, err := filepath.Abs(*pluginDir)
	if err != nil {
		return err
	}
	rt, err := cnitest.NewRuntime(cnitest.RuntimeOptions{
		Conflist: conf, NodeNetns: filepath.Join(cnitest.NetnsDir, *nodeNetns),
		PluginDirs: []string{plugins, herald}, CacheDir: *cache,
	})
	if err != nil {
		return err
	}
	p := cnitest.Pod{Namespace: ns, Name: name, UID: *uid, ContainerID: "podnet-" + *netns, Netns: filepath.Join(cnitest.NetnsDir, *netns)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if op == "del" {
		if err := rt.Del(ctx, p); err != nil {
			return err
		}
		return (&cnitest.Netns{Name: *netns}).Delete()
	}
	if _, err := cnitest.NewNetns(*netns); err != nil {
		return err
	}
	res, err := rt.Add(ctx, p)
	if err != nil {
		return err
	}
	return res.Print()
}

// withIPAM reads the conflist and points its first plugin's IPAM at the
// agent.
func withIPAM(path, socket, stateDir string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list map[string]any
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	plugins, _ := list["plugins"].([]any)
	if len(plugins) == 0 {
		return nil, fmt.Errorf("%s: no plugins", path)
	}
	first, _ := plugins[0].(map[string]any)
	ipam, _ := first["ipam"].(map[string]any)
	if ipam == nil {
		return nil, fmt.Errorf("%s: the first plugin has no ipam section", path)
	}
	ipam["socket"], ipam["stateDir"] = socket, stateDir
	return json.Marshal(list)
}
