package pki

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"testing"
)

// What the CA signs verifies against it, for its use; a second run keeps
// what the first made.
func TestEnsure(t *testing.T) {
	d := Dir(t.TempDir())
	if err := d.EnsureCA("test-ca"); err != nil {
		t.Fatal(err)
	}
	if err := d.EnsureServing("apiserver", []string{"kubernetes"}, []net.IP{net.IPv4(198, 18, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := d.EnsureClient("admin", "herald-admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	pool, err := d.CAPool()
	if err != nil {
		t.Fatal(err)
	}
	serving := cert(t, d.Cert("apiserver"))
	if _, err := serving.Verify(x509.VerifyOptions{Roots: pool, DNSName: "kubernetes"}); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	if err := serving.VerifyHostname("198.18.0.1"); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	client := cert(t, d.Cert("admin"))
	if _, err := client.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if client.Subject.CommonName != "herald-admin" || len(client.Subject.Organization) != 1 || client.Subject.Organization[0] != "system:masters" {
		t.Errorf("client subject %v", client.Subject)
	}
	for _, f := range []string{"sa.key", "sa.pub"} {
		if _, err := os.Stat(d.Path(f)); err != nil {
			t.Error(err)
		}
	}

	before, _ := os.ReadFile(d.CA())
	if err := d.EnsureCA("test-ca"); err != nil {
		t.Fatal(err)
	}
	if err := d.EnsureClient("admin", "someone-else"); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(d.CA())
	if string(before) != string(after) || cert(t, d.Cert("admin")).Subject.CommonName != "herald-admin" {
		t.Error("a second run replaced what the first made")
	}
}

func cert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
