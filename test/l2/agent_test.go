package l2

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/bpf"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/netlab"
)

// Lease timings of every agent: short, so that failover takes seconds.
const (
	leaseDuration = 2 * time.Second
	renewDeadline = time.Second
	retryPeriod   = 200 * time.Millisecond
)

// node is one "node" of the LAN: a namespace with eth0 on the bridge
// (test/netlab), a Node object and a herald-agent run with `ip netns exec`
// (test/agentproc). Its BPFRoot is a bpffs the test mounted, or "" for the
// agent's default /sys/fs/bpf, which inside `ip netns exec` is a fresh
// sysfs without bpffs: the agent has to mount it itself.
type node struct {
	*agentproc.Agent
	host   *netlab.Host
	labels map[string]string

	mu      sync.Mutex
	ifindex int // of eth0 in the node's namespace, once ready
}

// eth0Index returns the ifindex of eth0 in the node's namespace.
func (n *node) eth0Index() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ifindex
}

func (n *node) String() string { return fmt.Sprintf("%s (%s, %s)", n.Name, n.host.IP, n.host.MAC) }

// agents returns the nodes' agents.
func agents() []*agentproc.Agent {
	var out []*agentproc.Agent
	for _, n := range nodes {
		out = append(out, n.Agent)
	}
	return out
}

// device returns the agent's row for eth0.
func (n *node) device() (*tables.Device, error) {
	devs, err := agentproc.Table[*tables.Device](n.Agent, tables.DevicesTableName)
	if err != nil {
		return nil, err
	}
	for _, d := range devs {
		if d.Name == devName {
			return d, nil
		}
	}
	return nil, fmt.Errorf("%s: no %s in the devices table", n.Name, devName)
}

// announced returns the agent's l2-announce rows for ip.
func (n *node) announced(ip netip.Addr) ([]*tables.L2AnnounceEntry, error) {
	rows, err := agentproc.Table[*tables.L2AnnounceEntry](n.Agent, tables.L2AnnounceTableName)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(rows, func(e *tables.L2AnnounceEntry) bool { return e.IP != ip }), nil
}

// waitReady waits until the agent serves herald-dbg, knows its Node, has
// selected eth0 and attached the ARP responder to it.
func (n *node) waitReady() error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		if msg := n.UnexpectedExit(); msg != "" {
			return errors.New(msg)
		}
		last = n.readiness()
		if last == "" {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s: agent not ready after %s: %s", n.Name, timeout, last)
}

// readiness returns "" when ready, else what is missing.
func (n *node) readiness() string {
	d, err := n.device()
	if err != nil {
		return err.Error()
	}
	if !d.Selected {
		return fmt.Sprintf("%s not selected: %s", devName, d.NotSelectedReason)
	}
	if !slices.Equal(net.HardwareAddr(d.HWAddr), n.host.MAC) {
		return fmt.Sprintf("%s has MAC %s, want %s", devName, d.HWAddr, n.host.MAC)
	}
	n.mu.Lock()
	n.ifindex = d.Index
	n.mu.Unlock()
	nodes, err := agentproc.Table[*tables.Node](n.Agent, tables.NodesTableName)
	if err != nil {
		return err.Error()
	}
	if !slices.ContainsFunc(nodes, func(x *tables.Node) bool { return x.Name == n.Name }) {
		return fmt.Sprintf("Node %s is not in the nodes table", n.Name)
	}
	b, _ := os.ReadFile(n.LogPath())
	if !bytes.Contains(b, []byte("ARP responder attached")) {
		return "no \"ARP responder attached\" in the log yet"
	}
	return ""
}

// ---------------------------------------------------------------------------
// The pinned l2_responder_v4 and l2_responder_v6 maps
// ---------------------------------------------------------------------------

// The layout of l2_responder_v4 and l2_responder_v6 (bpf/l2_responder.c).
type (
	responderKey struct {
		IP4     [4]byte // network byte order
		Ifindex uint32
	}
	responderKey6 struct {
		IP6     [16]byte
		Ifindex uint32
		Pad     uint32
	}
	responderValue struct {
		ResponsesSent uint64
		MAC           [6]byte
		Pad           [2]byte
	}
)

// mapEntry is one entry of a node's l2_responder_v4 or l2_responder_v6.
type mapEntry struct {
	IP            netip.Addr
	Ifindex       int
	MAC           net.HardwareAddr
	ResponsesSent uint64
}

func (e mapEntry) String() string {
	return fmt.Sprintf("%s@%d -> %s (%d sent)", e.IP, e.Ifindex, e.MAC, e.ResponsesSent)
}

// mapEntries reads the node's pinned l2_responder_v4 and l2_responder_v6
// maps: in the bpffs we mounted, or, for an agent that mounted bpffs itself
// in its own mount namespace, through /proc/<pid>/root (agentproc's BPFFS).
func (n *node) mapEntries() ([]mapEntry, error) {
	root, err := n.BPFFS()
	if err != nil {
		return nil, err
	}
	var out []mapEntry
	read := func(name string, key any, ip func() netip.Addr, ifindex func() uint32) error {
		path := filepath.Join(root, "herald", name)
		m, err := ebpf.LoadPinnedMap(path, &ebpf.LoadPinOptions{ReadOnly: true})
		if err != nil {
			return fmt.Errorf("%s: opening pinned map: %w", n.Name, err)
		}
		defer m.Close()
		var v responderValue
		it := m.Iterate()
		for it.Next(key, &v) {
			out = append(out, mapEntry{
				IP:            ip(),
				Ifindex:       int(ifindex()),
				MAC:           slices.Clone(net.HardwareAddr(v.MAC[:])),
				ResponsesSent: v.ResponsesSent,
			})
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("%s: iterating %s: %w", n.Name, path, err)
		}
		return nil
	}
	var (
		k4 responderKey
		k6 responderKey6
	)
	if err := read(bpf.MapResponderV4, &k4, func() netip.Addr { return netip.AddrFrom4(k4.IP4) }, func() uint32 { return k4.Ifindex }); err != nil {
		return nil, err
	}
	if err := read(bpf.MapResponderV6, &k6, func() netip.Addr { return netip.AddrFrom16(k6.IP6) }, func() uint32 { return k6.Ifindex }); err != nil {
		return nil, err
	}
	return out, nil
}

// mapEntriesFor returns the node's map entries for ip.
func (n *node) mapEntriesFor(ip netip.Addr) ([]mapEntry, error) {
	all, err := n.mapEntries()
	return slices.DeleteFunc(all, func(e mapEntry) bool { return e.IP != ip }), err
}

// ---------------------------------------------------------------------------
// Logs
// ---------------------------------------------------------------------------

// printLogs logs every agent's output since the marks.
func printLogs(t testing.TB, marks map[*node]agentproc.LogMark) {
	t.Helper()
	for _, n := range nodes {
		t.Logf("----- log of agent %s -----\n%s\n----- end of log of agent %s -----", n.Name, agentproc.Tail(n.LogsSince(marks[n]), 300), n.Name)
	}
}

// isDone reports whether an l2-announce row is reconciled.
func isDone(e *tables.L2AnnounceEntry) bool { return e.Status.Kind == reconciler.StatusKindDone }
