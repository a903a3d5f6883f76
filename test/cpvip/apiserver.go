package cpvip

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// apiserverArgv is node n's kube-apiserver: on every address of its
// namespace (so the VIP reaches it wherever it lands), advertising its LAN
// address, storing in its local etcd member as kubeadm's stacked etcd
// does (a node cut off from the others loses quorum and turns unready).
// Anonymous requests are on, so the agents' /readyz probe needs no
// credentials (RBAC's system:public-info-viewer allows it).
func (cp *ControlPlane) apiserverArgv(n *CPNode) []string {
	k := cp.pki
	return []string{cp.apiserverBin,
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(EtcdClientPort),
		"--bind-address=0.0.0.0",
		"--secure-port=" + strconv.Itoa(APIServerPort),
		"--advertise-address=" + n.Host.IP.String(),
		"--tls-cert-file=" + k.Cert("apiserver-"+n.Name),
		"--tls-private-key-file=" + k.Key("apiserver-"+n.Name),
		"--client-ca-file=" + k.CA(),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + k.Path("sa.pub"),
		"--service-account-signing-key-file=" + k.Key("sa"),
		"--authorization-mode=RBAC",
		"--anonymous-auth=true",
		"--service-cluster-ip-range=" + serviceCIDR.String(),
		"--disable-admission-plugins=ServiceAccount",
		"--profiling=false",
	}
}

// ReadyzURL is the URL the agent probes: the node's own API server, on
// loopback.
var ReadyzURL = "https://127.0.0.1:" + strconv.Itoa(APIServerPort) + "/readyz"

// Readyz asks the node's kube-apiserver for /readyz on 127.0.0.1 from
// inside its namespace, anonymously, as the agent does; nil means 200 "ok".
func (n *CPNode) Readyz(ctx context.Context) error {
	return n.readyz(ctx, ReadyzURL)
}

// ReadyzAt asks /readyz of the node's kube-apiserver at its LAN address,
// from the client's namespace: what VIP traffic to this node meets.
func (n *CPNode) ReadyzAt(ctx context.Context) error {
	url := fmt.Sprintf("https://%s:%d/readyz", n.Host.IP, APIServerPort)
	return readyz(ctx, httpClientIn(n.cp.Client.Netns, n.cp.caPool, 2*time.Second), url)
}

func (n *CPNode) readyz(ctx context.Context, url string) error {
	return readyz(ctx, httpClientIn(n.Host.Netns, n.cp.caPool, 2*time.Second), url)
}

func readyz(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// KillAPIServer kills the node's kube-apiserver (SIGKILL) and waits until
// it is gone.
func (n *CPNode) KillAPIServer() error { return n.apiserver.stop(syscall.SIGKILL) }

// StartAPIServer starts the node's kube-apiserver again, with the flags it
// ran with; it does not wait for it to be ready (WaitReady).
func (n *CPNode) StartAPIServer() error { return n.apiserver.restart() }

// WaitReady polls Readyz until it answers ok, the API server exits, or ctx
// ends.
func (n *CPNode) WaitReady(ctx context.Context) error {
	exited := n.apiserver.exited()
	var last error
	for {
		if last = n.Readyz(ctx); last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("kube-apiserver of %s exited:\n%s", n.Name, n.apiserver.logs(30))
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver of %s not ready: %v", n.Name, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
