package cpvip

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"time"
)

// etcdURL is http://<addr>:<port>.
func etcdURL(addr netip.Addr, port int) string {
	return fmt.Sprintf("http://%s", netip.AddrPortFrom(addr, uint16(port)))
}

// etcdArgv is node n's member of the three-member cluster: client and
// peer URLs on its LAN address (clients on loopback too), plain HTTP, data
// in its directory. The three start together with --initial-cluster-state
// new, as kubeadm's stacked etcd after the first member joined.
func (cp *ControlPlane) etcdArgv(n *CPNode) []string {
	var initial []string
	for _, m := range cp.Nodes {
		initial = append(initial, m.Name+"="+etcdURL(m.Host.IP, EtcdPeerPort))
	}
	client := etcdURL(n.Host.IP, EtcdClientPort)
	peer := etcdURL(n.Host.IP, EtcdPeerPort)
	return []string{cp.etcdBin,
		"--name=" + n.Name,
		"--data-dir=" + filepath.Join(n.Dir, "etcd"),
		"--listen-client-urls=" + client + "," + etcdURL(netip.MustParseAddr("127.0.0.1"), EtcdClientPort),
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + strings.Join(initial, ","),
		"--initial-cluster-state=new",
		"--initial-cluster-token=herald-cpvip",
		"--listen-metrics-urls=",
		"--logger=zap", "--log-outputs=stderr",
	}
}

// EtcdMember is one member as etcd lists it.
type EtcdMember struct {
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
}

// EtcdMembers asks node n's etcd (through its gRPC gateway, from the test
// process over the LAN) for the cluster's members.
func (n *CPNode) EtcdMembers(ctx context.Context) ([]EtcdMember, error) {
	var out struct {
		Members []EtcdMember `json:"members"`
	}
	err := etcdPost(ctx, n.Host.IP, "/v3/cluster/member/list", &out)
	return out.Members, err
}

// etcdHealthy reports whether node n's member says it is healthy (it has a
// leader and answers).
func (n *CPNode) etcdHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, etcdURL(n.Host.IP, EtcdClientPort)+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"health":"true"`)) {
		return fmt.Errorf("etcd %s: /health: %s %s", n.Name, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

func etcdPost(ctx context.Context, addr netip.Addr, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, etcdURL(addr, EtcdClientPort)+path, strings.NewReader("{}"))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd at %s: %s: %s %s", addr, path, resp.Status, bytes.TrimSpace(body))
	}
	return json.Unmarshal(body, out)
}
