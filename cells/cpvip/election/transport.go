package election

import (
	"crypto/sha256"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/netip"
	"strconv"

	"github.com/hashicorp/memberlist"
	"github.com/heraldlb/herald/cells/internal/memberlog"
)

// transport carries beats and grants between the control-plane nodes:
// memberlist's packets, encrypted and authenticated with the peer secret
// (AES-GCM; packets without it are dropped), sent straight to each
// configured address. Memberlist's own member list is not used: the
// nodes are given, and the election judges presence by the beats.
type transport struct {
	ml  *memberlist.Memberlist
	in  chan []byte
	log *slog.Logger
}

func startTransport(logger *slog.Logger, self string, addr netip.Addr, port int, secret []byte) (*transport, error) {
	t := &transport{in: make(chan []byte, 256), log: logger}
	c := memberlist.DefaultLANConfig()
	c.Name = self
	c.BindAddr = addr.String()
	c.BindPort, c.AdvertisePort = port, port
	c.AdvertiseAddr = addr.String()
	key := sha256.Sum256(secret)
	c.SecretKey = key[:]
	c.GossipVerifyIncoming, c.GossipVerifyOutgoing = true, true
	c.Delegate = t
	c.Logger = log.New(&memberlog.Writer{Log: logger,
		SecretHint: "is peer-secret-file the same secret on every control-plane node?"}, "", 0)
	ml, err := memberlist.Create(c)
	if err != nil {
		return nil, fmt.Errorf("starting the election transport on %s: %w", net.JoinHostPort(addr.String(), strconv.Itoa(port)), err)
	}
	t.ml = ml
	return t, nil
}

func (t *transport) send(name string, addr netip.Addr, port int, b []byte) {
	a := memberlist.Address{Addr: net.JoinHostPort(addr.String(), strconv.Itoa(port)), Name: name}
	if err := t.ml.SendToAddress(a, b); err != nil {
		t.log.Debug("Sending to a control-plane node failed", "node", name, "error", err)
	}
}

func (t *transport) stop() { _ = t.ml.Shutdown() }

// NotifyMsg receives a message (memberlist.Delegate). A full queue drops
// it, as the network may: the protocol does not depend on any one packet.
func (t *transport) NotifyMsg(b []byte) {
	c := make([]byte, len(b))
	copy(c, b)
	select {
	case t.in <- c:
	default:
	}
}

func (t *transport) NodeMeta(int) []byte                 { return nil }
func (t *transport) GetBroadcasts(int, int) [][]byte     { return nil }
func (t *transport) LocalState(bool) []byte              { return nil }
func (t *transport) MergeRemoteState(buf []byte, _ bool) {}
