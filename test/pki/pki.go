// Package pki makes the certificates of a test's Kubernetes control plane,
// in one directory, as kubeadm lays out /etc/kubernetes/pki: one CA signs
// the API servers' serving certificates and every client certificate; a
// separate key pair signs service-account tokens. What exists is kept: a
// control plane brought up again in the same directory keeps its
// certificates, and the kubeconfigs that name them stay valid.
package pki

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

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Dir is the directory of the certificates and keys (PEM).
type Dir string

// Path is the path of a file in the directory.
func (d Dir) Path(name string) string { return filepath.Join(string(d), name) }

// CA is the CA certificate's path.
func (d Dir) CA() string { return d.Path("ca.crt") }

// Cert and Key are the paths of a pair.
func (d Dir) Cert(name string) string { return d.Path(name + ".crt") }
func (d Dir) Key(name string) string  { return d.Path(name + ".key") }

// EnsureCA creates the CA, with common name cn, and the service-account
// key pair (sa.key, sa.pub), unless they exist.
func (d Dir) EnsureCA(cn string) error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return err
	}
	if !exists(d.CA()) {
		key, err := newKey(d.Key("ca"))
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			Subject:               pkix.Name{CommonName: cn},
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		if err := sign(d.CA(), tmpl, tmpl, key, key); err != nil {
			return err
		}
	}
	if exists(d.Key("sa")) {
		return nil
	}
	sa, err := newKey(d.Key("sa"))
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return err
	}
	return os.WriteFile(d.Path("sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

// EnsureServing issues name's serving certificate (common name
// kube-apiserver) for these DNS names and addresses, unless it exists.
func (d Dir) EnsureServing(name string, dnsNames []string, ips []net.IP) error {
	return d.ensureLeaf(name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// EnsureClient issues name's client certificate, unless it exists:
// Kubernetes takes the user from its common name and the groups from its
// organizations.
func (d Dir) EnsureClient(name, user string, groups ...string) error {
	return d.ensureLeaf(name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// CAPool is the CA, for a client that verifies the API servers.
func (d Dir) CAPool() (*x509.CertPool, error) {
	b, err := os.ReadFile(d.CA())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no certificate", d.CA())
	}
	return pool, nil
}

func (d Dir) ensureLeaf(name string, tmpl *x509.Certificate) error {
	if exists(d.Cert(name)) {
		return nil
	}
	ca, caKey, err := readPair(d.CA(), d.Key("ca"))
	if err != nil {
		return err
	}
	key, err := newKey(d.Key(name))
	if err != nil {
		return err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	return sign(d.Cert(name), tmpl, ca, key, caKey)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// newKey makes a P-256 key and writes it to path.
func newKey(path string) (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return key, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// sign issues tmpl for key's public half, signed by parent's key, valid
// for ten years from an hour ago, and writes it to path.
func sign(path string, tmpl, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) error {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().AddDate(10, 0, 0)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return fmt.Errorf("certificate %s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
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

// WriteKubeconfig writes a kubeconfig for client's certificate, pointing
// at server (https://address:port), verified with the CA.
func (d Dir) WriteKubeconfig(path, server, client string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["herald"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: d.CA()}
	cfg.AuthInfos[client] = &clientcmdapi.AuthInfo{ClientCertificate: d.Cert(client), ClientKey: d.Key(client)}
	cfg.Contexts["herald"] = &clientcmdapi.Context{Cluster: "herald", AuthInfo: client}
	cfg.CurrentContext = "herald"
	return clientcmd.WriteToFile(*cfg, path)
}
