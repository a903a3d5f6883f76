package cpvip

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/heraldlb/herald/test/pki"
)

// writeConfig writes the certificates, the kubeconfigs and the agents'
// peer secret.
func (cp *ControlPlane) writeConfig() error {
	cp.pki = pki.Dir(filepath.Join(cp.Dir, "pki"))
	if err := cp.pki.EnsureCA("herald-cpvip-ca"); err != nil {
		return err
	}
	if err := cp.pki.EnsureClient("admin", "herald-cpvip-admin", "system:masters"); err != nil {
		return err
	}
	var err error
	if cp.caPool, err = cp.pki.CAPool(); err != nil {
		return err
	}
	for _, n := range cp.Nodes {
		// Its LAN address, both VIPs, loopback and the in-cluster names.
		ips := []net.IP{net.IP(n.Host.IP.AsSlice()), net.IP(VIP.AsSlice()), net.IP(VIP6.AsSlice()),
			net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IP(serviceCIDR.Addr().Next().AsSlice())}
		names := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
		if err := cp.pki.EnsureServing("apiserver-"+n.Name, names, ips); err != nil {
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
	if err := cp.pki.WriteKubeconfig(path, "https://"+netip.AddrPortFrom(server, APIServerPort).String(), "admin"); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// hostPort is addr:port, bracketed for IPv6.
func hostPort(addr netip.Addr, port int) string {
	return netip.AddrPortFrom(addr, uint16(port)).String()
}
