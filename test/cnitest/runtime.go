package cnitest

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
)

// Pod is a Pod sandbox as the runtime knows it.
type Pod struct {
	Namespace, Name, UID string
	ContainerID          string // the sandbox's ID: CNI_CONTAINERID
	Netns                string // path of its network namespace: CNI_NETNS
	IfName               string // CNI_IFNAME; "eth0" when empty
}

func (p Pod) ifName() string {
	if p.IfName == "" {
		return "eth0"
	}
	return p.IfName
}

// Attachment is the Pod's attachment as GC's valid attachments name it.
func (p Pod) Attachment() types.GCAttachment {
	return types.GCAttachment{ContainerID: p.ContainerID, IfName: p.ifName()}
}

// RuntimeOptions describe the node.
type RuntimeOptions struct {
	// Conflist is the network configuration list, e.g. from
	// BridgeNetwork.Conflist.
	Conflist []byte
	// NodeNetns is the path of the node's network namespace: the plugins
	// run there.
	NodeNetns string
	// PluginDirs are CNI_PATH: PluginsDir() and where herald-ipam is.
	PluginDirs []string
	// CacheDir is libcni's cache of results and configurations, which
	// CHECK and GC read; one per node (a temporary directory).
	CacheDir string
}

// Runtime is what a container runtime does with one network on one node:
// it sets up each Pod's loopback device and its interface on the network,
// tears them down, checks them, collects garbage and asks for the
// network's status, through libcni and the real plugins.
type Runtime struct {
	list     *libcni.NetworkConfigList
	loopback *libcni.NetworkConfigList
	cni      *libcni.CNIConfig
	exec     *nsExec
	paths    []string
}

// NewRuntime checks the options and parses the configuration.
func NewRuntime(o RuntimeOptions) (*Runtime, error) {
	if o.NodeNetns == "" || len(o.PluginDirs) == 0 || o.CacheDir == "" {
		return nil, fmt.Errorf("cnitest: RuntimeOptions need NodeNetns, PluginDirs and CacheDir")
	}
	list, err := libcni.NetworkConfFromBytes(o.Conflist)
	if err != nil {
		return nil, fmt.Errorf("cnitest: network configuration: %w", err)
	}
	// containerd and CRI-O bring each Pod's loopback device up with the
	// loopback plugin, as a network of its own, before the Pod's network.
	loopback, err := libcni.NetworkConfFromBytes([]byte(`{"cniVersion": "` + list.CNIVersion +
		`", "name": "cni-loopback", "plugins": [{"type": "loopback"}]}`))
	if err != nil {
		return nil, err
	}
	e := &nsExec{netns: o.NodeNetns}
	return &Runtime{
		list:     list,
		loopback: loopback,
		cni:      libcni.NewCNIConfigWithCacheDir(o.PluginDirs, o.CacheDir, e),
		exec:     e,
		paths:    o.PluginDirs,
	}, nil
}

// Network is the network's name.
func (r *Runtime) Network() string { return r.list.Name }

// rt is the runtime configuration of a Pod: CNI_ARGS as containerd passes
// them.
func (r *Runtime) rt(p Pod) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{
		ContainerID: p.ContainerID,
		NetNS:       p.Netns,
		IfName:      p.ifName(),
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", p.Namespace},
			{"K8S_POD_NAME", p.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", p.ContainerID},
			{"K8S_POD_UID", p.UID},
		},
	}
}

// Add sets the Pod up: loopback, then the network (ADD). It returns the
// network's result. On error the runtime would tear the sandbox down with
// Del; that is left to the caller.
func (r *Runtime) Add(ctx context.Context, p Pod) (*current.Result, error) {
	lo := r.rt(p)
	lo.IfName = "lo"
	if _, err := r.cni.AddNetworkList(ctx, r.loopback, lo); err != nil {
		return nil, fmt.Errorf("loopback: %w", err)
	}
	res, err := r.cni.AddNetworkList(ctx, r.list, r.rt(p))
	if err != nil {
		return nil, err
	}
	return current.NewResultFromResult(res)
}

// Del tears the Pod down: the network, then loopback (DEL). Both succeed
// when the namespace is gone already.
func (r *Runtime) Del(ctx context.Context, p Pod) error {
	if err := r.cni.DelNetworkList(ctx, r.list, r.rt(p)); err != nil {
		return err
	}
	lo := r.rt(p)
	lo.IfName = "lo"
	if err := r.cni.DelNetworkList(ctx, r.loopback, lo); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	return nil
}

// AddNetwork runs ADD of the network alone (the list's plugins: bridge and
// its IPAM plugin), without the loopback network a runtime sets up first:
// what a benchmark of the network's chain times.
func (r *Runtime) AddNetwork(ctx context.Context, p Pod) (*current.Result, error) {
	res, err := r.cni.AddNetworkList(ctx, r.list, r.rt(p))
	if err != nil {
		return nil, err
	}
	return current.NewResultFromResult(res)
}

// DelNetwork runs DEL of the network alone (see AddNetwork).
func (r *Runtime) DelNetwork(ctx context.Context, p Pod) error {
	return r.cni.DelNetworkList(ctx, r.list, r.rt(p))
}

// Check runs CHECK on the Pod's network attachment, with the result cached
// by Add.
func (r *Runtime) Check(ctx context.Context, p Pod) error {
	return r.cni.CheckNetworkList(ctx, r.list, r.rt(p))
}

// GC is libcni's garbage collection of the network, as a runtime runs it:
// a DEL for every cached attachment that is not valid, then GC to each
// plugin of the list with cni.dev/valid-attachments. (bridge v1.8.0 does not
// implement GC and so does not pass it on to its IPAM plugin: see
// DelegateGC.)
func (r *Runtime) GC(ctx context.Context, valid ...types.GCAttachment) error {
	return r.cni.GCNetworkList(ctx, r.list, &libcni.GCArgs{ValidAttachments: valid})
}

// DelegateGC runs GC on the IPAM plugin of the list's first plugin with the
// configuration that plugin would receive, as a main plugin that
// implements GC delegates it (ipam.ExecGC): the IPAM plugin's GC, which
// bridge v1.8.0 leaves out.
func (r *Runtime) DelegateGC(ctx context.Context, valid ...types.GCAttachment) error {
	if valid == nil {
		valid = []types.GCAttachment{}
	}
	conf, path, err := r.ipamConf(map[string]any{"cni.dev/valid-attachments": valid})
	if err != nil {
		return err
	}
	args := &invoke.Args{Command: "GC", Path: strings.Join(r.paths, string(os.PathListSeparator))}
	return invoke.ExecPluginWithoutResult(ctx, path, conf, args, r.exec)
}

// DelegateAdd runs ADD on the IPAM plugin alone, exactly as the list's
// first plugin (bridge) execs it when it delegates (ipam.ExecAdd): the
// same configuration on stdin, the Pod's CNI_* environment, in the node's
// namespace. No device is created; only the IPAM share of an ADD runs,
// which is what a benchmark of the IPAM plugin times.
func (r *Runtime) DelegateAdd(ctx context.Context, p Pod) (*current.Result, error) {
	conf, path, err := r.ipamConf(nil)
	if err != nil {
		return nil, err
	}
	res, err := invoke.ExecPluginWithResult(ctx, path, conf, r.ipamArgs("ADD", p), r.exec)
	if err != nil {
		return nil, err
	}
	return current.NewResultFromResult(res)
}

// DelegateDel runs DEL on the IPAM plugin alone, as the list's first
// plugin delegates it (ipam.ExecDel).
func (r *Runtime) DelegateDel(ctx context.Context, p Pod) error {
	conf, path, err := r.ipamConf(nil)
	if err != nil {
		return err
	}
	return invoke.ExecPluginWithoutResult(ctx, path, conf, r.ipamArgs("DEL", p), r.exec)
}

// ipamConf returns the configuration the IPAM plugin of the list's first
// plugin receives from it, with extra keys, and the plugin's path.
func (r *Runtime) ipamConf(extra map[string]any) ([]byte, string, error) {
	if len(r.list.Plugins) == 0 || r.list.Plugins[0].Network.IPAM.Type == "" {
		return nil, "", fmt.Errorf("cnitest: the first plugin of %s has no IPAM plugin", r.list.Name)
	}
	inject := map[string]any{"name": r.list.Name, "cniVersion": r.list.CNIVersion}
	for k, v := range extra {
		inject[k] = v
	}
	conf, err := libcni.InjectConf(r.list.Plugins[0], inject)
	if err != nil {
		return nil, "", err
	}
	path, err := r.exec.FindInPath(r.list.Plugins[0].Network.IPAM.Type, r.paths)
	if err != nil {
		return nil, "", err
	}
	return conf.Bytes, path, nil
}

// ipamArgs is the environment of a delegated verb for the Pod's attachment.
func (r *Runtime) ipamArgs(command string, p Pod) *invoke.Args {
	rt := r.rt(p)
	return &invoke.Args{
		Command: command, ContainerID: rt.ContainerID, NetNS: rt.NetNS, IfName: rt.IfName,
		PluginArgs: rt.Args, Path: strings.Join(r.paths, string(os.PathListSeparator)),
	}
}

// Status is STATUS of the network: nil when Pods can be added.
func (r *Runtime) Status(ctx context.Context) error {
	return r.cni.GetStatusNetworkList(ctx, r.list)
}
