package cpvip

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeConfig writes the certificates, the kubeconfigs and the agents'
// peer secret.
func (cp *ControlPlane) writeConfig() error {
	var err error
	if cp.pki, err = newPKI(filepath.Join(cp.Dir, "pki")); err != nil {
		return err
	}
	for _, n := range cp.Nodes {
		if err := cp.pki.serving(n.Name, n.Host.IP); err != nil {
			return err
		}
		n.Kubeconfig = filepath.Join(n.Dir, "admin.kubeconfig")
		if err := cp.WriteKubeconfig(n.Kubeconfig, netip.MustParseAddr("127.0.0.1")); err != nil {
			return err
		}
	}
	cp.Kubeconfig = filepath.Join(cp.Dir, "vip.kubeconfig")
	if err := cp.WriteKubeconfig(cp.Kubeconfig, VIP); err != nil {
		return err
	}
	cp.Kubeconfig6 = filepath.Join(cp.Dir, "vip6.kubeconfig")
	if err := cp.WriteKubeconfig(cp.Kubeconfig6, VIP6); err != nil {
		return err
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	cp.PeerSecretFile = filepath.Join(cp.Dir, "peer-secret")
	return os.WriteFile(cp.PeerSecretFile, []byte(hex.EncodeToString(secret)), 0o600)
}

// WriteKubeconfig writes an admin kubeconfig (client certificate of group
// system:masters) for the API server at https://<server>:6443: a VIP, a
// node's LAN address, or loopback for a client inside a node's namespace.
func (cp *ControlPlane) WriteKubeconfig(path string, server netip.Addr) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cpvip"] = &clientcmdapi.Cluster{
		Server:               "https://" + netip.AddrPortFrom(server, APIServerPort).String(),
		CertificateAuthority: cp.pki.CA(),
	}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: cp.pki.Cert("admin"), ClientKey: cp.pki.Key("admin")}
	cfg.Contexts["cpvip"] = &clientcmdapi.Context{Cluster: "cpvip", AuthInfo: "admin"}
	cfg.CurrentContext = "cpvip"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// hostPort is addr:port, bracketed for IPv6.
func hostPort(addr netip.Addr, port int) string {
	return netip.AddrPortFrom(addr, uint16(port)).String()
}
