package routeradv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mdlayher/ndp"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"
)

var (
	allNodes   = netip.MustParseAddr("ff02::1")
	allRouters = netip.MustParseAddr("ff02::2")
)

// routerLifetime is radvd's default. A zero lifetime ("not a default
// router") would be the tidier claim, and FRR 8.4 takes the node for its
// unnumbered peer with one too (test/bgp, TestUnnumbered), but Cilium sends
// a non-zero one because later FRR releases do not; the peer of an
// unnumbered session is a router that forwards, and so takes no default
// route from an advertisement either way.
const routerLifetime = 30 * time.Minute

// sender advertises on one interface until stopped. It opens its socket
// again when sending fails (the interface went away, or came back with
// another index), so that a peer is never left without advertisements.
type sender struct {
	cancel context.CancelFunc
	done   chan struct{}
	// solicit: a peer on the interface is not known yet; ask routers to
	// advertise (see interfaces).
	solicit atomic.Bool
}

func (s *sender) stop() {
	s.cancel()
	<-s.done
}

func start(parent context.Context, log *slog.Logger, name string) *sender {
	ctx, cancel := context.WithCancel(parent)
	s := &sender{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		run(ctx, log.With("interface", name), name, &s.solicit)
	}()
	return s
}

func run(ctx context.Context, log *slog.Logger, name string, solicit *atomic.Bool) {
	var (
		c        *conn
		answered chan struct{}
		failing  bool
		opens    int // failed opens in a row
	)
	closeConn := func() {
		if c != nil {
			c.Close()
			<-answered
			c = nil
		}
	}
	defer closeConn()
	for {
		if c == nil {
			var err error
			if c, err = open(name); err != nil {
				c = nil
				opens++
				// The first failures are the usual start: the link-local
				// address is still tentative (duplicate address detection,
				// a second or two after the link came up).
				if opens == 3 {
					log.Warn("Cannot send Router Advertisements for BGP unnumbered peers; retrying", "error", err)
					failing = true
				}
			} else {
				opens = 0
				answered = make(chan struct{})
				go answer(ctx, c, answered)
			}
		}
		if c != nil {
			if err := c.advertise(c.to); err != nil {
				if !failing {
					log.Warn("Sending a Router Advertisement failed; opening the socket again", "error", err)
				}
				failing = true
				closeConn()
			} else if failing {
				log.Info("Sending Router Advertisements again")
				failing = false
			}
			if c != nil && solicit.Load() {
				_ = c.solicit()
			}
		}
		// A socket that could not be opened is tried again soon, then
		// less often (an interface gone before the devices table says so).
		next := interval
		if c == nil {
			next = min(retryOpen<<min(opens-1, 3), interval)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
	}
}

const retryOpen = time.Second

// conn is an ICMPv6 socket on one interface, from its link-local address,
// with the advertisement it sends.
type conn struct {
	pc      *ipv6.PacketConn
	ra, rs  []byte // the Router Advertisement and Solicitation, marshalled
	to      net.Addr
	routers net.Addr
}

func (c *conn) Close() error { return c.pc.Close() }

// open opens the socket and builds the advertisement: no prefix, a router
// lifetime, the interface's MAC address. The socket does not loop its
// multicast back: the node's own kernel would otherwise take the node's
// advertisement for a router's (a neighbour entry for its own address).
// ndp's Listen does the rest of this, but leaves the loop on.
func open(name string) (*conn, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil, err
	}
	var ll netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Is6() && ip.IsLinkLocalUnicast() {
				ll = ip
				break
			}
		}
	}
	if !ll.IsValid() {
		return nil, fmt.Errorf("%s has no IPv6 link-local address", name)
	}
	// Zones by index: Go maps zone names to indexes once a minute, and
	// would use the index of an interface deleted and created again.
	zone := strconv.Itoa(ifi.Index)
	ic, err := icmp.ListenPacket("ip6:ipv6-icmp", ll.WithZone(zone).String())
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", name, err)
	}
	pc := ic.IPv6PacketConn()
	// Neighbor Discovery's hop limit: receivers drop anything else.
	setup := []error{pc.SetHopLimit(255), pc.SetMulticastHopLimit(255), pc.SetMulticastLoopback(false),
		pc.SetMulticastInterface(ifi), pc.JoinGroup(ifi, &net.IPAddr{IP: allRouters.AsSlice()})}
	var filter ipv6.ICMPFilter
	filter.SetAll(true)
	filter.Accept(ipv6.ICMPTypeRouterSolicitation)
	setup = append(setup, pc.SetICMPFilter(&filter))
	if err := errors.Join(setup...); err != nil {
		pc.Close()
		return nil, fmt.Errorf("setting up the socket on %s: %w", name, err)
	}
	ra := &ndp.RouterAdvertisement{CurrentHopLimit: 64, RouterLifetime: routerLifetime}
	rs := &ndp.RouterSolicitation{}
	if len(ifi.HardwareAddr) > 0 {
		ra.Options = []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: ifi.HardwareAddr}}
		rs.Options = []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: ifi.HardwareAddr}}
	}
	raBytes, err := ndp.MarshalMessage(ra)
	if err != nil {
		pc.Close()
		return nil, err
	}
	rsBytes, err := ndp.MarshalMessage(rs)
	if err != nil {
		pc.Close()
		return nil, err
	}
	return &conn{pc: pc, ra: raBytes, rs: rsBytes, to: &net.IPAddr{IP: allNodes.AsSlice(), Zone: zone},
		routers: &net.IPAddr{IP: allRouters.AsSlice(), Zone: zone}}, nil
}

// solicit asks the routers on the link to advertise themselves: a
// router answers at once, where its own next advertisement can be
// seconds away (FRR's: 10 s on an unnumbered link).
func (c *conn) solicit() error {
	_, err := c.pc.WriteTo(c.rs, nil, c.routers)
	return err
}

func (c *conn) advertise(to net.Addr) error {
	_, err := c.pc.WriteTo(c.ra, nil, to)
	return err
}

// answer replies to Router Solicitations at once, until the socket is
// closed, so that a peer that starts does not wait for the next round.
func answer(ctx context.Context, c *conn, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 1500)
	for ctx.Err() == nil {
		_ = c.pc.SetReadDeadline(time.Now().Add(time.Second))
		n, _, from, err := c.pc.ReadFrom(buf)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue
		case errors.Is(err, net.ErrClosed):
			return
		case err != nil:
			continue
		}
		if msg, err := ndp.ParseMessage(buf[:n]); err == nil {
			if _, ok := msg.(*ndp.RouterSolicitation); ok {
				_ = c.advertise(from)
			}
		}
	}
}
