package frr

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"time"
)

// Path is one path of a prefix in bgpd's table: every path received (after
// inbound policy), not only the best. A path shows up before bgpd has
// run its best path selection on it: wait for Best (or Multipath) rather
// than for the path.
type Path struct {
	// NextHop is the path's next hop; for IPv6 the global one when the
	// peer sent one (FRR lists it first, and marks the link-local one
	// "used" on a shared LAN: that is what zebra installs).
	NextHop netip.Addr
	// NextHopLinkLocal is the IPv6 link-local next hop, if any.
	NextHopLinkLocal netip.Addr
	Valid            bool
	Best             bool
	// Multipath: the path is one of the ECMP set (FRR marks every member,
	// the best one included, once there are two or more).
	Multipath bool
	// Stale: kept by graceful restart after the peer's session went down.
	Stale bool
	// Communities as FRR prints them in configuration syntax
	// ("65000:100", "no-export"); LargeCommunities likewise ("65000:1:2").
	Communities      []string
	LargeCommunities []string
	// LocalPref is 0 when the path has no LOCAL_PREF attribute (FRR
	// prints none for eBGP paths without a route-map setting it).
	LocalPref uint32
	MED       uint32
	// PeerID is the neighbor the path came from, as FRR names it (its
	// address); PeerRouterID that neighbor's router ID.
	PeerID       string
	PeerRouterID string
	// ASPath is the AS path as FRR prints it, e.g. "65002 65010"; empty
	// for a locally originated path.
	ASPath string
	Origin string // "IGP", "EGP", "incomplete"
}

// Peer is PeerID as an address (invalid if FRR named the peer otherwise,
// e.g. an interface for unnumbered BGP).
func (p Path) Peer() netip.Addr {
	a, _ := netip.ParseAddr(p.PeerID)
	return a
}

// The shape of `show bgp <afi> unicast json detail` in FRR 8.4: routes
// maps the prefix to a list whose first element is a header
// ({"prefix", "version", "advertisedTo"}) and the rest paths; "bestpath" is
// an object there (in the non-detail output, a bool).
type jsonTable struct {
	Routes map[string][]jsonPath `json:"routes"`
}

type jsonPath struct {
	ASPath *struct {
		String string `json:"string"`
	} `json:"aspath"`
	Origin    string `json:"origin"`
	Metric    uint32 `json:"metric"`
	LocPrf    uint32 `json:"locPrf"`
	Valid     bool   `json:"valid"`
	Stale     bool   `json:"stale"`
	Multipath bool   `json:"multipath"`
	Bestpath  *struct {
		Overall bool `json:"overall"`
	} `json:"bestpath"`
	Community *struct {
		String string `json:"string"`
	} `json:"community"`
	LargeCommunity *struct {
		String string `json:"string"`
	} `json:"largeCommunity"`
	Nexthops []struct {
		IP    string `json:"ip"`
		AFI   string `json:"afi"`
		Scope string `json:"scope"` // IPv6: "global" or "link-local"
	} `json:"nexthops"`
	Peer *struct {
		PeerID   string `json:"peerId"`
		RouterID string `json:"routerId"`
	} `json:"peer"`
}

// RIB reads bgpd's unicast table of afi ("ipv4" or "ipv6"): every path of
// every prefix.
func (r *Router) RIB(afi string) (map[netip.Prefix][]Path, error) {
	if afi != "ipv4" && afi != "ipv6" {
		return nil, fmt.Errorf("frr: afi %q is not ipv4 or ipv6", afi)
	}
	out, err := r.show("show bgp " + afi + " unicast json detail")
	if err != nil {
		return nil, err
	}
	return parseRIB(out)
}

func parseRIB(out []byte) (map[netip.Prefix][]Path, error) {
	var t jsonTable
	if err := json.Unmarshal(out, &t); err != nil {
		return nil, fmt.Errorf("frr: parsing the BGP table: %w: %s", err, firstLines(out, 3))
	}
	rib := make(map[netip.Prefix][]Path, len(t.Routes))
	for key, paths := range t.Routes {
		pfx, err := netip.ParsePrefix(key)
		if err != nil {
			return nil, fmt.Errorf("frr: BGP table prefix %q: %w", key, err)
		}
		for _, jp := range paths {
			if jp.Peer == nil {
				continue // the header element
			}
			p := Path{
				Valid:        jp.Valid,
				Best:         jp.Bestpath != nil && jp.Bestpath.Overall,
				Multipath:    jp.Multipath,
				Stale:        jp.Stale,
				LocalPref:    jp.LocPrf,
				MED:          jp.Metric,
				PeerID:       jp.Peer.PeerID,
				PeerRouterID: jp.Peer.RouterID,
				Origin:       jp.Origin,
			}
			if jp.ASPath != nil {
				p.ASPath = jp.ASPath.String
			}
			if jp.Community != nil {
				p.Communities = strings.Fields(jp.Community.String)
			}
			if jp.LargeCommunity != nil {
				p.LargeCommunities = strings.Fields(jp.LargeCommunity.String)
			}
			for _, nh := range jp.Nexthops {
				a, err := netip.ParseAddr(nh.IP)
				if err != nil {
					continue
				}
				switch {
				case nh.Scope == "link-local" || (a.Is6() && a.IsLinkLocalUnicast()):
					p.NextHopLinkLocal = a
				case !p.NextHop.IsValid():
					p.NextHop = a
				}
			}
			if !p.NextHop.IsValid() {
				p.NextHop = p.NextHopLinkLocal
			}
			rib[pfx] = append(rib[pfx], p)
		}
	}
	return rib, nil
}

// Neighbor is one BGP neighbor as `show bgp neighbors json` shows it.
type Neighbor struct {
	// Address is the key FRR uses: the neighbor's address (for a dynamic
	// neighbor from `bgp listen range`, the address it came from).
	Address  string
	State    string // "Idle", "Connect", "Active", "OpenSent", "OpenConfirm", "Established"
	RemoteAS uint32 // 0 until the first OPEN for remote-as external/internal
	LocalAS  uint32
	// RemoteRouterID is "0.0.0.0" until an OPEN came.
	RemoteRouterID string
	Hostname       string // the hostname capability the peer sent, if any
	// LastReset is FRR's "last reset due to" text, e.g. "NSF peer closed
	// the session", "Waiting for peer OPEN" (all a TCP-MD5 mismatch
	// gives: the kernel drops the peer's segments), "Notification
	// received (Cease/...)". LastResetCode is FRR's number for it.
	LastReset     string
	LastResetCode int
	// LastNotification is FRR's text for the last NOTIFICATION sent or
	// received, if FRR has one.
	LastNotification string
	// GracefulRestart: both sides advertised the graceful restart
	// capability in the current session (false while none is up: FRR
	// shows no capabilities then).
	GracefulRestart bool
	// RemoteGRMode is the peer's mode ("Restart", "Helper", ...;
	// "NotApplicable" while no session is up).
	RemoteGRMode           string
	ConnectionsEstablished int
	ConnectionsDropped     int
	// AcceptedPrefixes counts the prefixes accepted from the neighbor by
	// address family as FRR names it ("ipv4Unicast", "ipv6Unicast").
	AcceptedPrefixes map[string]int
	// SentPrefixes counts the prefixes FRR sends the neighbor, by address
	// family.
	SentPrefixes map[string]int
	// UpdatesSent and UpdatesReceived count UPDATE messages, over every
	// session FRR had with the neighbor.
	UpdatesSent, UpdatesReceived int
}

type jsonNeighbor struct {
	RemoteAs               uint32  `json:"remoteAs"`
	LocalAs                uint32  `json:"localAs"`
	RemoteRouterID         string  `json:"remoteRouterId"`
	Hostname               string  `json:"hostname"`
	BgpState               string  `json:"bgpState"`
	LastResetDueTo         string  `json:"lastResetDueTo"`
	LastResetCode          int     `json:"lastResetCode"`
	LastNotificationReason *string `json:"lastNotificationReason"`
	ConnectionsEstablished int     `json:"connectionsEstablished"`
	ConnectionsDropped     int     `json:"connectionsDropped"`
	NeighborCapabilities   struct {
		GracefulRestart string `json:"gracefulRestart"`
	} `json:"neighborCapabilities"`
	GracefulRestartInfo struct {
		RemoteGrMode string `json:"remoteGrMode"`
	} `json:"gracefulRestartInfo"`
	AddressFamilyInfo map[string]struct {
		AcceptedPrefixCounter int `json:"acceptedPrefixCounter"`
		SentPrefixCounter     int `json:"sentPrefixCounter"`
	} `json:"addressFamilyInfo"`
	MessageStats struct {
		UpdatesSent int `json:"updatesSent"`
		UpdatesRecv int `json:"updatesRecv"`
	} `json:"messageStats"`
}

// Neighbors reads every neighbor, keyed by address.
func (r *Router) Neighbors() (map[string]Neighbor, error) {
	out, err := r.show("show bgp neighbors json")
	if err != nil {
		return nil, err
	}
	return parseNeighbors(out)
}

func parseNeighbors(out []byte) (map[string]Neighbor, error) {
	// Besides the neighbors, the object may hold other keys (e.g.
	// "vrfId"), hence the raw messages.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil {
		return nil, fmt.Errorf("frr: parsing neighbors: %w: %s", err, firstLines(out, 3))
	}
	ns := make(map[string]Neighbor, len(raw))
	for addr, msg := range raw {
		if len(msg) == 0 || msg[0] != '{' {
			continue
		}
		var j jsonNeighbor
		if err := json.Unmarshal(msg, &j); err != nil {
			return nil, fmt.Errorf("frr: parsing neighbor %s: %w", addr, err)
		}
		if j.BgpState == "" {
			continue
		}
		n := Neighbor{
			Address:                addr,
			State:                  j.BgpState,
			RemoteAS:               j.RemoteAs,
			LocalAS:                j.LocalAs,
			RemoteRouterID:         j.RemoteRouterID,
			Hostname:               j.Hostname,
			LastReset:              j.LastResetDueTo,
			LastResetCode:          j.LastResetCode,
			GracefulRestart:        j.NeighborCapabilities.GracefulRestart == "advertisedAndReceived",
			RemoteGRMode:           j.GracefulRestartInfo.RemoteGrMode,
			ConnectionsEstablished: j.ConnectionsEstablished,
			ConnectionsDropped:     j.ConnectionsDropped,
			AcceptedPrefixes:       map[string]int{},
			SentPrefixes:           map[string]int{},
			UpdatesSent:            j.MessageStats.UpdatesSent,
			UpdatesReceived:        j.MessageStats.UpdatesRecv,
		}
		if j.LastNotificationReason != nil {
			n.LastNotification = *j.LastNotificationReason
		}
		for af, info := range j.AddressFamilyInfo {
			n.AcceptedPrefixes[af] = info.AcceptedPrefixCounter
			n.SentPrefixes[af] = info.SentPrefixCounter
		}
		ns[addr] = n
	}
	return ns, nil
}

// KernelRoute is a route in the namespace's kernel routing table (main
// table), from `ip -j route show`.
type KernelRoute struct {
	Dst      netip.Prefix
	Type     string // "unicast", "blackhole", "unreachable", ...
	Protocol string // "bgp" for zebra's BGP routes, "kernel", "static", ...
	Dev      string // single-path routes
	Metric   int
	// NextHops has one entry per gateway: several for an ECMP route.
	NextHops []KernelNextHop
}

// KernelNextHop is one next hop of a kernel route.
type KernelNextHop struct {
	Gateway netip.Addr // invalid for a directly connected route
	Dev     string
	Weight  int
}

type jsonKernelRoute struct {
	Dst      string `json:"dst"`
	Type     string `json:"type"`
	Protocol string `json:"protocol"`
	Gateway  string `json:"gateway"`
	Dev      string `json:"dev"`
	Metric   int    `json:"metric"`
	Nexthops []struct {
		Gateway string `json:"gateway"`
		Dev     string `json:"dev"`
		Weight  int    `json:"weight"`
	} `json:"nexthops"`
}

// KernelRoutes reads the namespace's main routing table of afi ("ipv4" or
// "ipv6").
func (r *Router) KernelRoutes(afi string) ([]KernelRoute, error) {
	return KernelRoutes(r.opts.Netns, afi)
}

// KernelRoutes reads the main routing table of afi ("ipv4" or "ipv6") in
// the named network namespace.
func KernelRoutes(netns, afi string) ([]KernelRoute, error) {
	var fam string
	switch afi {
	case "ipv4":
		fam = "-4"
	case "ipv6":
		fam = "-6"
	default:
		return nil, fmt.Errorf("frr: afi %q is not ipv4 or ipv6", afi)
	}
	out, err := exec.Command("ip", "-n", netns, "-j", fam, "route", "show").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ip -n %s route show: %w: %s", netns, err, firstLines(out, 3))
	}
	return parseKernelRoutes(out, afi)
}

func parseKernelRoutes(out []byte, afi string) ([]KernelRoute, error) {
	var js []jsonKernelRoute
	if err := json.Unmarshal(out, &js); err != nil {
		return nil, fmt.Errorf("frr: parsing ip -j route: %w: %s", err, firstLines(out, 3))
	}
	routes := make([]KernelRoute, 0, len(js))
	for _, j := range js {
		dst, err := parseDst(j.Dst, afi)
		if err != nil {
			return nil, err
		}
		kr := KernelRoute{Dst: dst, Type: j.Type, Protocol: j.Protocol, Dev: j.Dev, Metric: j.Metric}
		if kr.Type == "" {
			kr.Type = "unicast"
		}
		if j.Gateway != "" || (len(j.Nexthops) == 0 && j.Dev != "") {
			gw, _ := netip.ParseAddr(j.Gateway)
			kr.NextHops = append(kr.NextHops, KernelNextHop{Gateway: gw, Dev: j.Dev, Weight: 1})
		}
		for _, nh := range j.Nexthops {
			gw, _ := netip.ParseAddr(nh.Gateway)
			kr.NextHops = append(kr.NextHops, KernelNextHop{Gateway: gw, Dev: nh.Dev, Weight: nh.Weight})
		}
		routes = append(routes, kr)
	}
	return routes, nil
}

// parseDst reads ip's "dst": "default", a prefix, or a bare address for a
// host route.
func parseDst(s, afi string) (netip.Prefix, error) {
	if s == "default" {
		if afi == "ipv6" {
			return netip.MustParsePrefix("::/0"), nil
		}
		return netip.MustParsePrefix("0.0.0.0/0"), nil
	}
	if strings.Contains(s, "/") {
		return netip.ParsePrefix(s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("frr: kernel route dst %q: %w", s, err)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// KernelRoute returns the route to exactly dst, if there is one.
func (r *Router) KernelRoute(dst netip.Prefix) (KernelRoute, bool, error) {
	afi := "ipv4"
	if dst.Addr().Is6() {
		afi = "ipv6"
	}
	routes, err := r.KernelRoutes(afi)
	if err != nil {
		return KernelRoute{}, false, err
	}
	for _, kr := range routes {
		if kr.Dst == dst.Masked() {
			return kr, true, nil
		}
	}
	return KernelRoute{}, false, nil
}

// PollInterval is how often the Wait functions look.
const PollInterval = 200 * time.Millisecond

// Wait calls check every PollInterval until it returns true or ctx ends;
// then it returns ctx's error joined with the last error check returned.
func Wait(ctx context.Context, check func() (bool, error)) error {
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	var last error
	for {
		ok, err := check()
		if err == nil && ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-t.C:
		}
	}
}

// WaitRIB polls RIB(afi) until cond holds. It returns the last table read
// (for the failure message when the wait fails).
func (r *Router) WaitRIB(ctx context.Context, afi string, cond func(map[netip.Prefix][]Path) bool) (map[netip.Prefix][]Path, error) {
	var rib map[netip.Prefix][]Path
	err := Wait(ctx, func() (bool, error) {
		var err error
		if rib, err = r.RIB(afi); err != nil {
			return false, err
		}
		return cond(rib), nil
	})
	return rib, err
}

// WaitNeighbors polls Neighbors until cond holds; it returns the last
// neighbors read.
func (r *Router) WaitNeighbors(ctx context.Context, cond func(map[string]Neighbor) bool) (map[string]Neighbor, error) {
	var ns map[string]Neighbor
	err := Wait(ctx, func() (bool, error) {
		var err error
		if ns, err = r.Neighbors(); err != nil {
			return false, err
		}
		return cond(ns), nil
	})
	return ns, err
}

// WaitEstablished waits until every given neighbor is Established.
func (r *Router) WaitEstablished(ctx context.Context, addrs ...string) (map[string]Neighbor, error) {
	return r.WaitNeighbors(ctx, func(ns map[string]Neighbor) bool {
		for _, a := range addrs {
			if ns[a].State != "Established" {
				return false
			}
		}
		return true
	})
}

// WaitKernelRoutes polls KernelRoutes(afi) until cond holds; it returns
// the last routes read.
func (r *Router) WaitKernelRoutes(ctx context.Context, afi string, cond func([]KernelRoute) bool) ([]KernelRoute, error) {
	var routes []KernelRoute
	err := Wait(ctx, func() (bool, error) {
		var err error
		if routes, err = r.KernelRoutes(afi); err != nil {
			return false, err
		}
		return cond(routes), nil
	})
	return routes, err
}
