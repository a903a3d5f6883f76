package realcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The cluster's PKI, as kubeadm lays it out: one CA signs the API server's
// serving certificate and every client certificate (administrator,
// controller-manager, scheduler, kubelets, kube-proxy, the API server's own
// client to the kubelets); a separate key pair signs service-account
// tokens. Kubelets sign their own serving certificates, as they do by
// default. Certificates are written once; a cluster brought up again in
// the same directory keeps them (its kubeconfigs stay valid).

// identity is the subject of a client certificate: Kubernetes takes the
// user from CN and the groups from O.
type identity struct {
	file   string // base name of the .crt/.key pair
	user   string
	groups []string
}

// pki is where the certificates and keys are.
type pki struct{ dir string }

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

// CA returns the CA certificate's path.
func (p pki) CA() string { return p.path("ca.crt") }

// Cert and Key return the paths of a pair.
func (p pki) Cert(name string) string { return p.path(name + ".crt") }
func (p pki) Key(name string) string  { return p.path(name + ".key") }

// ensure creates the CA, the service-account key pair, the API server's
// serving certificate (for the given names and addresses) and the client
// certificates, those that do not exist yet.
func (p pki) ensure(serverNames []string, serverIPs []net.IP, clients []identity) error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	ca, caKey, err := p.ensureCA()
	if err != nil {
		return err
	}
	if _, err := os.Stat(p.Key("sa")); errors.Is(err, os.ErrNotExist) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		if err := writeKey(p.Key("sa"), key); err != nil {
			return err
		}
		pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p.path("sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
			return err
		}
	}
	if err := p.ensureLeaf("apiserver", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    serverNames,
		IPAddresses: serverIPs,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, caKey); err != nil {
		return err
	}
	for _, c := range clients {
		if err := p.ensureLeaf(c.file, &x509.Certificate{
			Subject:     pkix.Name{CommonName: c.user, Organization: c.groups},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, ca, caKey); err != nil {
			return err
		}
	}
	return nil
}

func (p pki) ensureCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	if _, err := os.Stat(p.CA()); err == nil {
		return readPair(p.CA(), p.Key("ca"))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "herald-realcluster-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	if err := writeKey(p.Key("ca"), key); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(p.CA(), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func (p pki) ensureLeaf(name string, tmpl *x509.Certificate, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	if _, err := os.Stat(p.Cert(name)); err == nil {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().AddDate(10, 0, 0)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("certificate %s: %w", name, err)
	}
	if err := writeKey(p.Key(name), key); err != nil {
		return err
	}
	return os.WriteFile(p.Cert(name), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

func readPair(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, err
	}
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, err
	}
	cblock, _ := pem.Decode(cb)
	kblock, _ := pem.Decode(kb)
	if cblock == nil || kblock == nil {
		return nil, nil, fmt.Errorf("%s or %s is not PEM", certPath, keyPath)
	}
	cert, err := x509.ParseCertificate(cblock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kblock.Bytes)
	return cert, key, err
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func (c *Cluster) ensurePKI() error {
	clients := []identity{
		{file: "admin", user: "herald-admin", groups: []string{"system:masters"}},
		{file: "kube-controller-manager", user: "system:kube-controller-manager"},
		{file: "kube-scheduler", user: "system:kube-scheduler"},
		{file: "kube-proxy", user: "system:kube-proxy"},
		{file: "apiserver-kubelet-client", user: "kube-apiserver-kubelet-client", groups: []string{"system:masters"}},
	}
	for _, n := range c.state.Nodes {
		clients = append(clients, identity{file: "kubelet-" + n, user: "system:node:" + n, groups: []string{"system:nodes"}})
	}
	names := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}
	ips := []net.IP{net.IP(c.cp.apiAddr.AsSlice()), net.IP(ServiceCIDR.Addr().Next().AsSlice()), net.IPv4(127, 0, 0, 1)}
	// An HA cluster's API servers answer on the VIPs and, to the kubernetes
	// Service, on their nodes' addresses.
	ips = append(ips, net.IP(ControlPlaneVIP.AsSlice()), net.IP(ControlPlaneVIP6.AsSlice()), net.IPv6loopback)
	for _, n := range c.Nodes {
		ips = append(ips, net.IP(n.IP.AsSlice()), net.IP(n.IP6.AsSlice()))
	}
	k := c.p.pki()
	if err := k.ensure(names, ips, clients); err != nil {
		return err
	}
	for _, who := range []string{"admin", "kube-controller-manager", "kube-scheduler"} {
		if err := writeKubeconfig(c.p.kubeconfig(who), c.Server, k, who); err != nil {
			return err
		}
	}
	for _, n := range c.state.Nodes {
		nd := c.p.node(n)
		if err := writeKubeconfig(filepath.Join(nd, "kubelet.kubeconfig"), c.Server, k, "kubelet-"+n); err != nil {
			return err
		}
		if err := writeKubeconfig(filepath.Join(nd, "kube-proxy.kubeconfig"), c.Server, k, "kube-proxy"); err != nil {
			return err
		}
	}
	return nil
}
