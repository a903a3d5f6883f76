package cluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// KubeProxyPath is where ensure-tools.sh puts kube-proxy (of KubeVersion).
func KubeProxyPath() string {
	return filepath.Join(filepath.Dir(ApiserverPath(KubeVersion)), "kube-proxy-"+KubeVersion)
}

// KubeProxy is a kube-proxy run as a node's: in the node's network
// namespace, named after the node.
type KubeProxy struct {
	// Log is the path of its output.
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// KubeProxyOptions say where and how it runs.
type KubeProxyOptions struct {
	Netns string // the node's network namespace
	Node  string // the Node it is (--hostname-override)
	// HealthzIP is an address of the node that the test process can
	// reach: kube-proxy serves /healthz on HealthzIP:10256, and
	// StartKubeProxy waits there until it is healthy.
	HealthzIP string
	Dir       string // for its log
	Mode      string // "iptables" (default) or "nftables"
}

// StartKubeProxy starts kube-proxy with the cluster's admin kubeconfig and
// waits until it reports healthy (it has synced Services and
// EndpointSlices and programmed the rules). kube-proxy changes nothing
// outside the namespace: conntrack sysctls are left alone. Stop it with
// Stop.
func (c *Cluster) StartKubeProxy(o KubeProxyOptions) (*KubeProxy, error) {
	bin := KubeProxyPath()
	if !isExecutable(bin) {
		return nil, fmt.Errorf("cluster: %s is missing: run make tools (install/dev/ensure-tools.sh)", bin)
	}
	mode := o.Mode
	if mode == "" {
		mode = "iptables"
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	p := &KubeProxy{Log: filepath.Join(o.Dir, "kube-proxy.log"), done: make(chan struct{})}
	logf, err := os.Create(p.Log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	healthz := net.JoinHostPort(o.HealthzIP, "10256")
	p.cmd = exec.Command("ip", "netns", "exec", o.Netns, bin,
		"--kubeconfig", c.Kubeconfig,
		"--hostname-override", o.Node,
		"--proxy-mode", mode,
		"--healthz-bind-address", healthz,
		"--metrics-bind-address", "127.0.0.1:10249",
		// Those are global knobs of the host (or per namespace, depending
		// on the kernel): leave them.
		"--conntrack-max-per-core", "0",
		"--conntrack-tcp-timeout-established", "0",
		"--conntrack-tcp-timeout-close-wait", "0",
		"--v", "2",
	)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cluster: starting kube-proxy in %s: %w", o.Netns, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+healthz+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
			err = fmt.Errorf("/healthz: %s", resp.Status)
		}
		select {
		case <-p.done:
			b, _ := os.ReadFile(p.Log)
			return nil, fmt.Errorf("cluster: kube-proxy in %s exited: %s", o.Netns, tail(string(b), 20))
		case <-ctx.Done():
			_ = p.Stop()
			return nil, fmt.Errorf("cluster: kube-proxy in %s not healthy after a minute: %w", o.Netns, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops kube-proxy (SIGTERM, then SIGKILL after 10 s). Its rules stay
// in the namespace, as they do on a node.
func (p *KubeProxy) Stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
