package cpvipconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

func valid() Config {
	c := Defaults
	c.NodeName = "cp2"
	c.VIPs = []string{"198.18.40.100", "fd00:18:0:40::100"}
	c.Peers = []string{"cp1=198.18.40.11", "cp2=198.18.40.12", "cp3=198.18.40.13"}
	return c
}

func TestParse(t *testing.T) {
	p, err := valid().Parse()
	if err != nil {
		t.Fatal(err)
	}
	if p.Self != "cp2" || p.Addr.String() != "198.18.40.12" || len(p.VIPs) != 2 || len(p.Peers) != 3 || p.Digest == "" {
		t.Fatalf("parsed %+v", p)
	}
	c := valid()
	c.BGPLocalASN, c.BGPPeers = 65010, []string{"198.18.40.254=65000"}
	if q, err := c.Parse(); err != nil || q.BGP == nil || q.BGP.RouterID.String() != "198.18.40.12" || q.BGP.Peers[0].ASN != 65000 {
		t.Fatalf("BGP: %+v, %v", q.BGP, err)
	}
	c.BGPBFDInterval = 100 * time.Millisecond
	if q, err := c.Parse(); err != nil || q.BGP.BFD == nil || *q.BGP.BFD != (tables.BGPBFD{ReceiveIntervalMs: 100, TransmitIntervalMs: 100, DetectMultiplier: 3}) {
		t.Fatalf("BFD: %+v, %v", q.BGP, err)
	}
	other := valid()
	other.VIPs = []string{"198.18.40.100"}
	if q, _ := other.Parse(); q.Digest == p.Digest {
		t.Fatal("different VIP lists have one digest")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no VIP", func(c *Config) { c.VIPs = nil }, "vips: no VIP given"},
		{"not an address", func(c *Config) { c.VIPs = []string{"198.18.40"} }, `vips: "198.18.40" is not a unicast IP address`},
		{"multicast", func(c *Config) { c.VIPs = []string{"224.0.0.18"} }, "not a unicast"},
		{"loopback", func(c *Config) { c.VIPs = []string{"127.0.0.10"} }, "not a unicast"},
		{"twice", func(c *Config) { c.VIPs = []string{"198.18.40.100", "198.18.40.100"} }, "given twice"},
		{"no peers", func(c *Config) { c.Peers = nil }, "peers: no control-plane node"},
		{"peer without address", func(c *Config) { c.Peers = []string{"cp1", "cp2=198.18.40.12"} }, `peers: "cp1" is not name=address`},
		{"peer name twice", func(c *Config) { c.Peers = []string{"cp2=198.18.40.11", "cp2=198.18.40.12"} }, "repeats a name or an address"},
		{"a VIP as a peer", func(c *Config) { c.Peers = append(c.Peers, "cp4=198.18.40.100") }, "is a VIP"},
		{"not among the peers", func(c *Config) { c.NodeName = "cp9" }, `this node, "cp9" (node-name), is not among them`},
		{"readyz URL", func(c *Config) { c.ReadyzURL = "127.0.0.1:6443/readyz" }, "readyz-url"},
		{"readyz thresholds", func(c *Config) { c.ReadyzFailureThreshold = 0 }, "readyz-failure-threshold"},
		{"readyz CA missing", func(c *Config) { c.ReadyzCAFile = "/nonexistent/ca.crt" }, "readyz-ca-file"},
		{"fence window", func(c *Config) { c.FenceWindow = 10_000_000 }, "fence-window"},
		{"BGP peers without an ASN", func(c *Config) { c.BGPPeers = []string{"198.18.40.254=65000"} }, "bgp-peers: set, but bgp-local-asn is not"},
		{"BGP without peers", func(c *Config) { c.BGPLocalASN = 65010 }, "bgp-peers: none given"},
		{"BGP peer without ASN", func(c *Config) { c.BGPLocalASN, c.BGPPeers = 65010, []string{"198.18.40.254"} }, `bgp-peers: "198.18.40.254" is not address=asn`},
		{"BGP ASN out of range", func(c *Config) { c.BGPLocalASN, c.BGPPeers = 1<<33, []string{"198.18.40.254=65000"} }, "bgp-local-asn"},
		{"BGP hold time", func(c *Config) {
			c.BGPLocalASN, c.BGPPeers, c.BGPHoldTime = 65010, []string{"198.18.40.254=65000"}, time.Second
		}, "bgp-hold-time"},
		{"BFD without BGP", func(c *Config) { c.BGPBFDInterval = 100 * time.Millisecond }, "bgp-bfd-interval: set, but bgp-local-asn is not"},
		{"BFD interval too short", func(c *Config) {
			c.BGPLocalASN, c.BGPPeers, c.BGPBFDInterval = 65010, []string{"198.18.40.254=65000"}, 5*time.Millisecond
		}, "bgp-bfd-interval: 5ms is not whole milliseconds from 10ms to 1m"},
		{"BFD multiplier", func(c *Config) {
			c.BGPLocalASN, c.BGPPeers, c.BGPBFDInterval, c.BGPBFDDetectMultiplier = 65010, []string{"198.18.40.254=65000"}, 100*time.Millisecond, 0
		}, "bgp-bfd-detect-multiplier: 0 is outside 1-255"},
		{"BGP router ID on an IPv6 node", func(c *Config) {
			c.Peers = []string{"cp1=fd00::11", "cp2=fd00::12", "cp3=fd00::13"}
			c.BGPLocalASN, c.BGPPeers = 65010, []string{"fd00::254=65000"}
		}, "bgp-router-id: needed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.edit(&c)
			_, err := c.Parse()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"unset", "", "peer-secret-file: not set"},
		{"missing", filepath.Join(dir, "nope"), "no such file"},
		{"short", write("short", "tooshort\n"), "shorter than 16 characters"},
		{"blank", write("blank", "                    \n"), "shorter than 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			c.PeerSecretFile = tc.file
			if _, err := c.Secret(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	c := valid()
	c.PeerSecretFile = write("good", "0123456789abcdef0123\n")
	if s, err := c.Secret(); err != nil || string(s) != "0123456789abcdef0123" {
		t.Fatalf("secret %q, %v", s, err)
	}
}
