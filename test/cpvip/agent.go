package cpvip

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cluster"
)

// agentArgv is the agent's command line (the contract of
// `herald-agent control-plane-vip`), then Options.AgentArgs, then extra;
// a flag given again replaces the earlier one.
func (cp *ControlPlane) agentArgv(n *CPNode, extra []string) []string {
	var peers []string
	for _, m := range cp.Nodes {
		peers = append(peers, m.Name+"="+m.Host.IP.String())
	}
	argv := []string{cp.opts.AgentBin, "control-plane-vip",
		"--node-name=" + n.Name,
		"--vips=" + VIP.String() + "," + VIP6.String(),
		"--peers=" + strings.Join(peers, ","),
		"--peer-secret-file=" + cp.PeerSecretFile,
		"--readyz-url=" + ReadyzURL,
		"--readyz-ca-file=" + cp.pki.CA(),
		"--devices=" + agentDevice,
		"--bpf-root=" + n.BPFRoot,
		"--health-serve-addr=" + hostPort(n.Host.IP, AgentHealthPort),
		"--prometheus-serve-addr=" + hostPort(n.Host.IP, AgentMetricsPort),
		// The three agents share the machine's /var/run.
		"--dbg-socket=" + n.DbgSocket(),
	}
	return override(override(argv, cp.opts.AgentArgs), extra)
}

// override appends args to argv, dropping from argv every --flag= that
// args sets again: slice flags (--vips, --peers) add up when given twice.
func override(argv, args []string) []string {
	set := map[string]bool{}
	for _, a := range args {
		if name, _, ok := strings.Cut(a, "="); ok {
			set[name] = true
		}
	}
	out := make([]string, 0, len(argv)+len(args))
	for _, a := range argv {
		if name, _, ok := strings.Cut(a, "="); !ok || !set[name] {
			out = append(out, a)
		}
	}
	return append(out, args...)
}

// agentDevice is the LAN device in every host's namespace.
const agentDevice = "eth0"

// StartAgent starts the node's agent with the harness's command line,
// Options.AgentArgs and extraArgs (which later starts do not keep). It
// does not wait for the agent to be ready. Without Options.AgentBin it
// builds herald-agent first.
func (n *CPNode) StartAgent(extraArgs ...string) error {
	cp := n.cp
	if cp.opts.AgentBin == "" {
		bin, dbg, err := agentproc.Build(cluster.RepoRoot(), filepath.Join(cp.Dir, "bin"))
		if err != nil {
			return err
		}
		cp.opts.AgentBin, cp.opts.DbgBin = bin, dbg
	}
	return n.agent.start(cp.agentArgv(n, extraArgs))
}

// KillAgent kills the node's agent (SIGKILL): no cleanup, its eBPF
// programs stay attached until their deadline says otherwise.
func (n *CPNode) KillAgent() error { return n.agent.stop(syscall.SIGKILL) }

// StopAgent stops the node's agent as systemd or the kubelet would
// (SIGTERM) and waits for it to exit.
func (n *CPNode) StopAgent() error { return n.agent.stop(syscall.SIGTERM) }

// AgentRunning reports whether the node's agent runs (frozen counts) and
// its pid.
func (n *CPNode) AgentRunning() (pid int, ok bool) { return n.agent.running() }

// DbgSocket is the agent's --dbg-socket, in the node's directory.
func (n *CPNode) DbgSocket() string { return filepath.Join(n.Dir, "dbg.sock") }

// Dbg runs herald-dbg (Options.DbgBin) against the node's agent, e.g.
// Dbg("statedb", "control-plane-vip").
func (n *CPNode) Dbg(args ...string) ([]byte, error) {
	if n.cp.opts.DbgBin == "" {
		return nil, fmt.Errorf("no herald-dbg: set Options.DbgBin")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.cp.opts.DbgBin, append([]string{"--socket", n.DbgSocket()}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("herald-dbg %s against %s: %w: %s", strings.Join(args, " "), n.Name, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

// AgentHealth returns the status code and body of the agent's /healthz on
// --health-serve-addr, asked from the client's namespace.
func (n *CPNode) AgentHealth() (int, string, error) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: DialerIn(n.cp.Client.Netns, 2*time.Second), DisableKeepAlives: true}}
	resp, err := c.Get(fmt.Sprintf("http://%s/healthz", hostPort(n.Host.IP, AgentHealthPort)))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b), err
}
