package l2

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/bpf"
	"github.com/heraldlb/herald/tables"
)

// Lease timings of every agent: short, so that failover takes seconds.
const (
	leaseDuration = 2 * time.Second
	renewDeadline = time.Second
	retryPeriod   = 200 * time.Millisecond
)

// node is one "node" of the LAN: a namespace with eth0 on the bridge, a
// Node object and a herald-agent run with `ip netns exec`.
type node struct {
	name string // --node-name and the Node object
	lanHost
	// bpfRoot is the agent's --bpf-root: a bpffs the test mounted, or ""
	// for the agent's default /sys/fs/bpf, which inside `ip netns exec` is
	// a fresh sysfs without bpffs: the agent has to mount it itself.
	bpfRoot string
	labels  map[string]string
	dir     string // logs and the debug socket
	// extraArgs are added to the agent's command line by the next start.
	extraArgs []string

	mu      sync.Mutex
	agent   *agentProc
	starts  int
	ifindex int // of eth0 in the node's namespace, once ready
}

// agentProc is one run of herald-agent.
type agentProc struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when it has exited
	err     error         // its exit status, once done is closed

	mu       sync.Mutex
	stopping bool // we signalled it: an exit is expected
}

func (p *agentProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (n *node) socket() string { return filepath.Join(n.dir, "dbg.sock") }

// eth0Index returns the ifindex of eth0 in the node's namespace.
func (n *node) eth0Index() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ifindex
}

func (n *node) String() string { return fmt.Sprintf("%s (%s, %s)", n.name, n.ip, n.mac) }

// current returns the node's agent process (nil before the first start).
func (n *node) current() *agentProc {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.agent
}

// running reports whether the agent process is alive.
func (n *node) running() bool {
	p := n.current()
	return p != nil && !p.exited()
}

// pid returns the agent's pid, or 0 if it is not running.
func (n *node) pid() int {
	p := n.current()
	if p == nil || p.exited() {
		return 0
	}
	return p.cmd.Process.Pid
}

func (n *node) args() []string {
	args := []string{
		"netns", "exec", n.ns, agentBin,
		"--kubeconfig", testCluster.Kubeconfig,
		"--node-name", n.name,
		"--k8s-namespace", leaseNS,
		"--enable-l2-announcements",
		"--devices", devName,
		"--l2-announcements-lease-duration", leaseDuration.String(),
		"--l2-announcements-renew-deadline", renewDeadline.String(),
		"--l2-announcements-retry-period", retryPeriod.String(),
		"--dbg-socket", n.socket(),
	}
	if n.bpfRoot != "" {
		args = append(args, "--bpf-root", n.bpfRoot)
	}
	return append(args, n.extraArgs...)
}

// start runs the agent: `ip netns exec <ns> herald-agent ...` (ip execs
// the agent, so the process is the agent). It does not wait for it to be
// ready (see waitReady).
func (n *node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.agent != nil && !n.agent.exited() {
		return fmt.Errorf("%s: agent already running", n.name)
	}
	n.starts++
	p := &agentProc{
		logPath: filepath.Join(n.dir, fmt.Sprintf("agent-%d.log", n.starts)),
		done:    make(chan struct{}),
	}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return err
	}
	p.cmd = exec.Command("ip", n.args()...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.Env = agentEnv()
	// Should the test binary die, the agent goes with it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("%s: starting the agent: %w", n.name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	n.agent = p
	return nil
}

// agentEnv is the environment without anything the agent would read as
// configuration.
func agentEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HERALD_") || k == "NODE_NAME" || k == "KUBECONFIG" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// signal sends sig to the running agent and waits for it to exit (SIGKILL
// after the timeout).
func (n *node) signal(sig syscall.Signal) error {
	p := n.current()
	if p == nil || p.exited() {
		return nil
	}
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s: agent did not exit within %s of %v; killed", n.name, timeout, sig)
	}
}

// kill9 kills the agent with SIGKILL: no cleanup at all; its Lease stays
// held until it expires.
func (n *node) kill9() error { return n.signal(syscall.SIGKILL) }

// stop stops the agent with SIGTERM, as the kubelet would.
func (n *node) stop() error { return n.signal(syscall.SIGTERM) }

// unexpectedExit describes the agent's exit if it died without being asked.
func (n *node) unexpectedExit() string {
	p := n.current()
	if p == nil || !p.exited() {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return ""
	}
	return fmt.Sprintf("agent %s exited unexpectedly: %v", n.name, p.err)
}

// dbg runs herald-dbg against the agent's socket.
func (n *node) dbg(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, dbgBin, append([]string{"--socket", n.socket()}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: herald-dbg %s: %w: %s", n.name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func dbgTable[T any](n *node, table string) ([]T, error) {
	out, err := n.dbg("statedb", table, "-o", "json")
	if err != nil {
		return nil, err
	}
	var rows []T
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("%s: decoding herald-dbg statedb %s: %w\n%s", n.name, table, err, out)
	}
	return rows, nil
}

// device returns the agent's row for eth0.
func (n *node) device() (*tables.Device, error) {
	devs, err := dbgTable[*tables.Device](n, tables.DevicesTableName)
	if err != nil {
		return nil, err
	}
	for _, d := range devs {
		if d.Name == devName {
			return d, nil
		}
	}
	return nil, fmt.Errorf("%s: no %s in the devices table", n.name, devName)
}

// announced returns the agent's l2-announce rows for ip.
func (n *node) announced(ip netip.Addr) ([]*tables.L2AnnounceEntry, error) {
	rows, err := dbgTable[*tables.L2AnnounceEntry](n, tables.L2AnnounceTableName)
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
		if msg := n.unexpectedExit(); msg != "" {
			return errors.New(msg)
		}
		last = n.readiness()
		if last == "" {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s: agent not ready after %s: %s", n.name, timeout, last)
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
	if !slices.Equal(net.HardwareAddr(d.HWAddr), n.mac) {
		return fmt.Sprintf("%s has MAC %s, want %s", devName, d.HWAddr, n.mac)
	}
	n.mu.Lock()
	n.ifindex = d.Index
	n.mu.Unlock()
	nodes, err := dbgTable[*tables.Node](n, tables.NodesTableName)
	if err != nil {
		return err.Error()
	}
	if !slices.ContainsFunc(nodes, func(x *tables.Node) bool { return x.Name == n.name }) {
		return fmt.Sprintf("Node %s is not in the nodes table", n.name)
	}
	p := n.current()
	b, _ := os.ReadFile(p.logPath)
	if !bytes.Contains(b, []byte("ARP responder attached")) {
		return "no \"ARP responder attached\" in the log yet"
	}
	return ""
}

// ---------------------------------------------------------------------------
// The pinned l2_responder_v4 map
// ---------------------------------------------------------------------------

// The layout of l2_responder_v4 (bpf/l2_responder.c).
type (
	responderKey struct {
		IP4     [4]byte // network byte order
		Ifindex uint32
	}
	responderValue struct {
		ResponsesSent uint64
		MAC           [6]byte
		Pad           [2]byte
	}
)

// mapEntry is one entry of a node's l2_responder_v4.
type mapEntry struct {
	IP            netip.Addr
	Ifindex       int
	MAC           net.HardwareAddr
	ResponsesSent uint64
}

func (e mapEntry) String() string {
	return fmt.Sprintf("%s@%d -> %s (%d sent)", e.IP, e.Ifindex, e.MAC, e.ResponsesSent)
}

// mapPath is where the agent pinned l2_responder_v4, as seen from the
// test: in the bpffs we mounted, or, for an agent that mounted bpffs itself
// in its own mount namespace, through /proc/<pid>/root.
func (n *node) mapPath() (string, error) {
	if n.bpfRoot != "" {
		return filepath.Join(n.bpfRoot, "herald", bpf.MapResponderV4), nil
	}
	pid := n.pid()
	if pid == 0 {
		return "", fmt.Errorf("%s: agent not running: its bpffs is gone with its mount namespace", n.name)
	}
	return filepath.Join("/proc", strconv.Itoa(pid), "root", bpf.DefaultBPFFSRoot, "herald", bpf.MapResponderV4), nil
}

// mapEntries reads the node's pinned l2_responder_v4 map.
func (n *node) mapEntries() ([]mapEntry, error) {
	path, err := n.mapPath()
	if err != nil {
		return nil, err
	}
	m, err := ebpf.LoadPinnedMap(path, &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("%s: opening pinned map: %w", n.name, err)
	}
	defer m.Close()
	var (
		k   responderKey
		v   responderValue
		out []mapEntry
	)
	it := m.Iterate()
	for it.Next(&k, &v) {
		out = append(out, mapEntry{
			IP:            netip.AddrFrom4(k.IP4),
			Ifindex:       int(k.Ifindex),
			MAC:           slices.Clone(net.HardwareAddr(v.MAC[:])),
			ResponsesSent: v.ResponsesSent,
		})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("%s: iterating %s: %w", n.name, path, err)
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

// logMark is a position in the node's logs: which run, and how far.
type logMark struct {
	start  int
	offset int64
}

func (n *node) logMark() logMark {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := logMark{start: n.starts}
	if n.agent != nil {
		if fi, err := os.Stat(n.agent.logPath); err == nil {
			m.offset = fi.Size()
		}
	}
	return m
}

// logSince returns the agent's logs from mark on (every run since).
func (n *node) logSince(m logMark) string {
	n.mu.Lock()
	starts := n.starts
	n.mu.Unlock()
	var b strings.Builder
	for i := max(m.start, 1); i <= starts; i++ {
		data, err := os.ReadFile(filepath.Join(n.dir, fmt.Sprintf("agent-%d.log", i)))
		if err != nil {
			continue
		}
		if i == m.start && m.offset <= int64(len(data)) {
			data = data[m.offset:]
		}
		fmt.Fprintf(&b, "[run %d of agent %s]\n%s", i, n.name, data)
	}
	return b.String()
}

// tail keeps the last max lines of s.
func tail(s string, max int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > max {
		lines = append([]string{fmt.Sprintf("[... %d earlier lines]", len(lines)-max)}, lines[len(lines)-max:]...)
	}
	return strings.Join(lines, "\n")
}

// printLogs logs every agent's output since the marks.
func printLogs(t testing.TB, marks map[*node]logMark) {
	t.Helper()
	for _, n := range nodes {
		t.Logf("----- log of agent %s -----\n%s\n----- end of log of agent %s -----", n.name, tail(n.logSince(marks[n]), 300), n.name)
	}
}

// isDone reports whether an l2-announce row is reconciled.
func isDone(e *tables.L2AnnounceEntry) bool { return e.Status.Kind == reconciler.StatusKindDone }
