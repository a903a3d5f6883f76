package cpvip

import (
	"context"
	"net/netip"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/netlab"
)

// CPNode is one control-plane host: its namespace on the LAN, its etcd
// member, its kube-apiserver and (when started) its agent.
type CPNode struct {
	Name string
	Host *netlab.Host
	Dir  string // logs, etcd data
	// BPFRoot is the agent's --bpf-root, a bpffs mounted in the test's
	// mount namespace (its pinned maps are readable there).
	BPFRoot string
	// Kubeconfig is an admin kubeconfig for the node's own API server on
	// 127.0.0.1, for clients inside the node's namespace.
	Kubeconfig string

	cp                     *ControlPlane
	etcd, apiserver, agent *process
}

// MAC is the node's LAN MAC address, as ARP and NDP answers carry it.
func (n *CPNode) MAC() string { return n.Host.MAC.String() }

// NodeByMAC names the node with that MAC address ("" if none).
func (cp *ControlPlane) NodeByMAC(mac string) string {
	for _, n := range cp.Nodes {
		if n.MAC() == mac {
			return n.Name
		}
	}
	return ""
}

// Freeze stops every process in the node's namespace (SIGSTOP): etcd, the
// API server, the agent and anything a test started there, as a hung
// machine. Processes started while it is frozen are not frozen.
func (n *CPNode) Freeze() error { return signalNetns(n.Host.Netns, syscall.SIGSTOP) }

// Thaw resumes every process in the node's namespace (SIGCONT).
func (n *CPNode) Thaw() error { return signalNetns(n.Host.Netns, syscall.SIGCONT) }

// Cut partitions the node from the LAN (netlab.Cut): its links stay up,
// its frames go nowhere.
func (n *CPNode) Cut() error { return n.cp.LAN.Cut(n.Name) }

// Heal plugs a cut node back in.
func (n *CPNode) Heal() error { return n.cp.LAN.Heal(n.Name) }

// BlockReadyz, on, makes every TCP packet to 127.0.0.1:6443 in the node's
// namespace fail with a reset (an nftables rule, netlab.Refuse): the
// agent's /readyz probe fails as if the API server were down, while
// traffic to the API server at the node's LAN address (the VIP's) still
// works. Off removes the rule (and any other netlab.Refuse of this host).
func (n *CPNode) BlockReadyz(on bool) error { return BlockReadyz(n.Host.Netns, on) }

// BlockReadyz is CPNode.BlockReadyz for any network namespace (a real
// cluster's node).
func BlockReadyz(netns string, on bool) error {
	if on {
		return netlab.RefuseIn(netns, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), APIServerPort))
	}
	return netlab.AllowIn(netns)
}

// FlapReadyz blocks and unblocks /readyz on loopback (BlockReadyz), each
// state lasting every, until ctx ends; it leaves /readyz unblocked and
// returns how many times it blocked it.
func (n *CPNode) FlapReadyz(ctx context.Context, every time.Duration) (int, error) {
	return FlapReadyz(ctx, n.Host.Netns, every)
}

// FlapReadyz is CPNode.FlapReadyz for any network namespace.
func FlapReadyz(ctx context.Context, netns string, every time.Duration) (int, error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	blocked, blocks := false, 0
	for {
		select {
		case <-ctx.Done():
			return blocks, BlockReadyz(netns, false)
		case <-tick.C:
		}
		blocked = !blocked
		if blocked {
			blocks++
		}
		if err := BlockReadyz(netns, blocked); err != nil {
			_ = BlockReadyz(netns, false)
			return blocks, err
		}
	}
}

// Logs returns the tails of the node's daemons' logs.
func (n *CPNode) Logs(maxLines int) string {
	return n.etcd.logs(maxLines) + n.apiserver.logs(maxLines) + n.agent.logs(maxLines)
}
