package cpvip

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// pki is the control plane's certificates, in one directory: a CA that
// signs every node's serving certificate and the administrator's client
// certificate, and the key pair that signs service-account tokens (shared
// by the three API servers, as kubeadm copies it to every control-plane
// node).
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	CAPool *x509.CertPool
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// CA is the CA certificate's path; Cert and Key a pair's.
func (p *pki) CA() string              { return p.path("ca.crt") }
func (p *pki) Cert(name string) string { return p.path(name + ".crt") }
func (p *pki) Key(name string) string  { return p.path(name + ".key") }

// newPKI creates the CA, the service-account keys and the administrator's
// certificate (group system:masters) in dir.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	key, err := p.newKey("ca")
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "herald-cpvip-ca"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	if p.ca, err = p.sign("ca", tmpl, tmpl, key, key); err != nil {
		return nil, err
	}
	p.caKey = key
	p.CAPool = x509.NewCertPool()
	p.CAPool.AddCert(p.ca)

	sa, err := p.newKey("sa")
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.path("sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return nil, err
	}
	return p, p.leaf("admin", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "herald-cpvip-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// serving issues node's kube-apiserver serving certificate, valid for its
// LAN address, both VIPs, loopback and the in-cluster names.
func (p *pki) serving(node string, ip netip.Addr) error {
	ips := []net.IP{net.IP(ip.AsSlice()), net.IP(VIP.AsSlice()), net.IP(VIP6.AsSlice()),
		net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IP(serviceCIDR.Addr().Next().AsSlice())}
	return p.leaf("apiserver-"+node, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

func (p *pki) leaf(name string, tmpl *x509.Certificate) error {
	key, err := p.newKey(name)
	if err != nil {
		return err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	_, err = p.sign(name, tmpl, p.ca, key, p.caKey)
	return err
}

// newKey makes a P-256 key and writes it to <name>.key.
func (p *pki) newKey(name string) (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return key, os.WriteFile(p.Key(name), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// sign issues tmpl for key's public half, signed by parent's signer, and
// writes it to <name>.crt.
func (p *pki) sign(name string, tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().AddDate(1, 0, 0)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", name, err)
	}
	if err := os.WriteFile(p.Cert(name), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}
