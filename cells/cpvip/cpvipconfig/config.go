// Package cpvipconfig is the configuration of the control-plane VIP mode
// (herald-agent control-plane-vip): which VIPs, which nodes elect their
// owner, the peer secret, and how the local API server's readiness is
// judged. It reads nothing from the API server: everything is given on
// the command line, in the environment or in a config directory, and the
// same on every control-plane node.
package cpvipconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// Config of the control-plane VIP mode.
type Config struct {
	NodeName string   // node-name
	VIPs     []string // vips
	Peers    []string // peers: name=address, every control-plane node, this one too

	PeerPort       int    // peer-port
	PeerSecretFile string // peer-secret-file

	ReadyzURL              string        // readyz-url
	ReadyzCAFile           string        // readyz-ca-file
	ReadyzPeriod           time.Duration // readyz-period
	ReadyzTimeout          time.Duration // readyz-timeout
	ReadyzFailureThreshold int           // readyz-failure-threshold
	ReadyzSuccessThreshold int           // readyz-success-threshold

	// FenceWindow is how long a quorum's grant lets the owner answer
	// (see cells/cpvip/election): the time a frozen or cut-off owner
	// may still answer, and so the floor of every failover but a
	// release.
	FenceWindow time.Duration // fence-window

	// BGP, optional: the owner also advertises the VIPs to these routers.
	BGPLocalASN int64         // bgp-local-asn; 0: no BGP
	BGPPeers    []string      // bgp-peers: address=asn
	BGPRouterID string        // bgp-router-id
	BGPHoldTime time.Duration // bgp-hold-time
	// BFD on the BGP sessions, optional: a router drops a frozen or
	// cut-off owner's routes after the detection time, not the hold time.
	BGPBFDInterval         time.Duration // bgp-bfd-interval; 0: no BFD
	BGPBFDDetectMultiplier int           // bgp-bfd-detect-multiplier

	// SysctlDir is where the host's /proc/sys is: a container mounts the
	// host's /proc/sys/net somewhere writable (arp_ignore, see
	// cells/cpvip/election).
	SysctlDir string // sysctl-dir
}

// Defaults: the agent's peer port is 7947; this mode's is the next one.
var Defaults = Config{
	PeerPort:               7948,
	ReadyzURL:              "https://127.0.0.1:6443/readyz",
	ReadyzPeriod:           100 * time.Millisecond,
	ReadyzTimeout:          300 * time.Millisecond,
	ReadyzFailureThreshold: 3,
	ReadyzSuccessThreshold: 10,
	FenceWindow:            300 * time.Millisecond,
	SysctlDir:              "/proc/sys",
	BGPHoldTime:            9 * time.Second,
	BGPBFDDetectMultiplier: 3,
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("node-name", def.NodeName, "Name of this control-plane node, as in --peers (defaults to $NODE_NAME, then the host name)")
	flags.StringSlice("vips", def.VIPs, "Virtual IPs of the API servers (IPv4 and IPv6), each on a subnet of a selected device; the same on every node")
	flags.StringSlice("peers", def.Peers, "Every control-plane node as name=address, this one included; the same on every node. The owner needs a majority of them")
	flags.Int("peer-port", def.PeerPort, "TCP and UDP port the control-plane nodes elect the owner on")
	flags.String("peer-secret-file", def.PeerSecretFile, "File holding the secret that authenticates and encrypts the election (at least 16 characters, the same on every node)")
	flags.String("readyz-url", def.ReadyzURL, "URL of the local kube-apiserver's readiness endpoint: the node may own the VIPs only while it answers 200")
	flags.String("readyz-ca-file", def.ReadyzCAFile, "CA bundle to verify the API server's certificate with; empty skips verification (only the status code is read)")
	flags.Duration("readyz-period", def.ReadyzPeriod, "How often the readiness endpoint is asked")
	flags.Duration("readyz-timeout", def.ReadyzTimeout, "How long one ask may take before it counts as a failure")
	flags.Int("readyz-failure-threshold", def.ReadyzFailureThreshold, "Failures in a row after which the node is no longer eligible (and gives the VIPs up)")
	flags.Int("readyz-success-threshold", def.ReadyzSuccessThreshold, "Successes in a row after which the node is eligible again")
	flags.Int64("bgp-local-asn", def.BGPLocalASN, "Also advertise the VIPs over BGP from the owner, with this local ASN; 0: L2 only")
	flags.StringSlice("bgp-peers", def.BGPPeers, "The routers the owner advertises the VIPs to, as address=asn")
	flags.String("bgp-router-id", def.BGPRouterID, "BGP router ID; empty: this node's IPv4 address in --peers")
	flags.Duration("bgp-hold-time", def.BGPHoldTime, "BGP hold time offered to the routers (the keepalive is a third of it): how long a router keeps a frozen or cut-off owner's routes")
	flags.Duration("bgp-bfd-interval", def.BGPBFDInterval, "Run BFD on the BGP sessions, sending and expecting a packet at this interval (e.g. 100ms); 0: no BFD. The routers must run BFD with these nodes too")
	flags.Int("bgp-bfd-detect-multiplier", def.BGPBFDDetectMultiplier, "BFD packets missed in a row after which a session is down: the router drops a frozen or cut-off owner's routes after interval × multiplier")
	flags.String("sysctl-dir", def.SysctlDir, "Where the host's /proc/sys is, writable (a container mounts the host's /proc/sys/net below it): the agent sets arp_ignore there")
	flags.Duration("fence-window", def.FenceWindow, "How long one election round lets the owner answer: a frozen or cut-off owner falls silent within it, and a new owner waits it out")
}

// Peer is one control-plane node.
type Peer struct {
	Name string
	Addr netip.Addr
}

// Parsed is the configuration checked and parsed.
type Parsed struct {
	Self  string
	VIPs  []netip.Addr
	Peers []Peer // in the order given: the ranking
	// Addr is this node's address among the peers.
	Addr netip.Addr
	// Digest identifies the VIPs and peers: nodes whose digests differ
	// do not elect together.
	Digest string
	// BGP is nil without bgp-local-asn.
	BGP *BGP
}

// BGP is the optional BGP announcement of the VIPs.
type BGP struct {
	LocalASN int64
	RouterID netip.Addr
	Peers    []BGPPeer
	HoldTime time.Duration
	// BFD is every session's BFD, nil: none.
	BFD *tables.BGPBFD
}

// BGPPeer is one router.
type BGPPeer struct {
	Addr netip.Addr
	ASN  int64
}

// Node returns this node's name as the agent finds its own: --node-name,
// else $NODE_NAME, else the host name.
func (c Config) Node() string { return agentconfig.Config{NodeName: c.NodeName}.Node() }

// Parse checks the configuration; every error names the option.
func (c Config) Parse() (Parsed, error) {
	p := Parsed{Self: c.Node()}
	var err error
	if len(c.VIPs) == 0 {
		return p, fmt.Errorf("vips: no VIP given")
	}
	for _, s := range c.VIPs {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil || !a.IsGlobalUnicast() && !a.IsPrivate() {
			return p, fmt.Errorf("vips: %q is not a unicast IP address", s)
		}
		a = a.Unmap()
		if slices.Contains(p.VIPs, a) {
			return p, fmt.Errorf("vips: %s is given twice", a)
		}
		p.VIPs = append(p.VIPs, a)
	}
	if len(c.Peers) == 0 {
		return p, fmt.Errorf("peers: no control-plane node given (name=address, this node included)")
	}
	for _, s := range c.Peers {
		name, addr, ok := strings.Cut(strings.TrimSpace(s), "=")
		a, err := netip.ParseAddr(addr)
		if !ok || name == "" || err != nil {
			return p, fmt.Errorf("peers: %q is not name=address", s)
		}
		if slices.ContainsFunc(p.Peers, func(q Peer) bool { return q.Name == name || q.Addr == a.Unmap() }) {
			return p, fmt.Errorf("peers: %q repeats a name or an address", s)
		}
		p.Peers = append(p.Peers, Peer{Name: name, Addr: a.Unmap()})
		if slices.Contains(p.VIPs, a.Unmap()) {
			return p, fmt.Errorf("peers: %s is a VIP, not a node's address", a)
		}
	}
	i := slices.IndexFunc(p.Peers, func(q Peer) bool { return q.Name == p.Self })
	if i < 0 {
		return p, fmt.Errorf("peers: this node, %q (node-name), is not among them", p.Self)
	}
	p.Addr = p.Peers[i].Addr
	if err := c.checkReadyz(); err != nil {
		return p, err
	}
	if c.PeerPort <= 0 || c.PeerPort > 65535 {
		return p, fmt.Errorf("peer-port: %d is not a port", c.PeerPort)
	}
	if c.FenceWindow < 100*time.Millisecond {
		return p, fmt.Errorf("fence-window: %s is shorter than 100ms: the owner would lose the VIP to a few lost packets", c.FenceWindow)
	}
	if p.BGP, err = c.parseBGP(p.Addr); err != nil {
		return p, err
	}
	p.Digest = digest(p)
	return p, nil
}

// parseBGP checks the BGP options; nil without bgp-local-asn.
func (c Config) parseBGP(self netip.Addr) (*BGP, error) {
	if c.BGPLocalASN == 0 {
		switch {
		case len(c.BGPPeers) > 0:
			return nil, fmt.Errorf("bgp-peers: set, but bgp-local-asn is not")
		case c.BGPBFDInterval != 0:
			return nil, fmt.Errorf("bgp-bfd-interval: set, but bgp-local-asn is not")
		}
		return nil, nil
	}
	if c.BGPLocalASN < 0 || c.BGPLocalASN > 4294967295 {
		return nil, fmt.Errorf("bgp-local-asn: %d is not an ASN", c.BGPLocalASN)
	}
	b := &BGP{LocalASN: c.BGPLocalASN, HoldTime: c.BGPHoldTime}
	if c.BGPHoldTime < 3*time.Second {
		return nil, fmt.Errorf("bgp-hold-time: %s is shorter than BGP's 3s", c.BGPHoldTime)
	}
	if len(c.BGPPeers) == 0 {
		return nil, fmt.Errorf("bgp-peers: none given for bgp-local-asn %d", c.BGPLocalASN)
	}
	for _, s := range c.BGPPeers {
		addr, asn, ok := strings.Cut(strings.TrimSpace(s), "=")
		a, err := netip.ParseAddr(addr)
		n, nerr := strconv.ParseInt(asn, 10, 64)
		if !ok || err != nil || nerr != nil || n <= 0 || n > 4294967295 {
			return nil, fmt.Errorf("bgp-peers: %q is not address=asn", s)
		}
		b.Peers = append(b.Peers, BGPPeer{Addr: a.Unmap(), ASN: n})
	}
	bfd, err := c.parseBFD()
	if err != nil {
		return nil, err
	}
	b.BFD = bfd
	switch {
	case c.BGPRouterID != "":
		id, err := netip.ParseAddr(c.BGPRouterID)
		if err != nil || !id.Is4() {
			return nil, fmt.Errorf("bgp-router-id: %q is not an IPv4 address", c.BGPRouterID)
		}
		b.RouterID = id
	case self.Is4():
		b.RouterID = self
	default:
		return nil, fmt.Errorf("bgp-router-id: needed, this node's address in peers (%s) is no IPv4 address", self)
	}
	return b, nil
}

// parseBFD checks the BFD settings within the bounds Cilium's spec.bfd
// has (10 ms to 60 s, a multiplier of 1 to 255).
func (c Config) parseBFD() (*tables.BGPBFD, error) {
	if c.BGPBFDInterval == 0 {
		return nil, nil
	}
	if c.BGPBFDInterval < 10*time.Millisecond || c.BGPBFDInterval > time.Minute || c.BGPBFDInterval%time.Millisecond != 0 {
		return nil, fmt.Errorf("bgp-bfd-interval: %s is not whole milliseconds from 10ms to 1m", c.BGPBFDInterval)
	}
	if c.BGPBFDDetectMultiplier < 1 || c.BGPBFDDetectMultiplier > 255 {
		return nil, fmt.Errorf("bgp-bfd-detect-multiplier: %d is outside 1-255", c.BGPBFDDetectMultiplier)
	}
	ms := int32(c.BGPBFDInterval / time.Millisecond)
	return &tables.BGPBFD{ReceiveIntervalMs: ms, TransmitIntervalMs: ms, DetectMultiplier: int32(c.BGPBFDDetectMultiplier)}, nil
}

func (c Config) checkReadyz() error {
	u, err := url.Parse(c.ReadyzURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("readyz-url: %q is not an http(s) URL", c.ReadyzURL)
	}
	switch {
	case c.ReadyzPeriod <= 0:
		return fmt.Errorf("readyz-period: %s must be positive", c.ReadyzPeriod)
	case c.ReadyzTimeout <= 0:
		return fmt.Errorf("readyz-timeout: %s must be positive", c.ReadyzTimeout)
	case c.ReadyzFailureThreshold < 1:
		return fmt.Errorf("readyz-failure-threshold: %d must be at least 1", c.ReadyzFailureThreshold)
	case c.ReadyzSuccessThreshold < 1:
		return fmt.Errorf("readyz-success-threshold: %d must be at least 1", c.ReadyzSuccessThreshold)
	}
	if c.ReadyzCAFile != "" {
		if _, err := os.ReadFile(c.ReadyzCAFile); err != nil {
			return fmt.Errorf("readyz-ca-file: %w", err)
		}
	}
	return nil
}

// digest identifies the VIPs and the peers, in order.
func digest(p Parsed) string {
	h := sha256.New()
	for _, v := range p.VIPs {
		fmt.Fprintln(h, v)
	}
	for _, q := range p.Peers {
		fmt.Fprintln(h, q.Name, q.Addr)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// MinSecretLen: shorter peer secrets are refused.
const MinSecretLen = 16

// Secret reads the peer secret.
func (c Config) Secret() ([]byte, error) {
	if c.PeerSecretFile == "" {
		return nil, fmt.Errorf("peer-secret-file: not set; the control-plane nodes authenticate each other with a shared secret of at least %d characters", MinSecretLen)
	}
	b, err := os.ReadFile(c.PeerSecretFile)
	if err != nil {
		return nil, fmt.Errorf("peer-secret-file: %w", err)
	}
	if len(strings.TrimSpace(string(b))) < MinSecretLen {
		return nil, fmt.Errorf("peer-secret-file: the secret in %s is shorter than %d characters", c.PeerSecretFile, MinSecretLen)
	}
	return []byte(strings.TrimSpace(string(b))), nil
}

// String is the peer as bgp-peers gives it: address=asn.
func (p BGPPeer) String() string { return fmt.Sprintf("%s=%d", p.Addr, p.ASN) }
