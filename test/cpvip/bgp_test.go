package cpvip

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/frr"
)

const routerASN, nodeASN = 65000, 65010

// bfdProfile is the router's BFD for the control-plane nodes: 100 ms × 3,
// as the agents' --bgp-bfd-interval=100ms.
const bfdProfile = "bfd\n profile cp\n  receive-interval 100\n  transmit-interval 100\n  detect-multiplier 3\n exit\nexit\n"

// startRouter starts FRR in the client's namespace, with a session to
// every control-plane node in both families (and BFD with the cp
// profile), and every agent with BGP towards it (agentArgs added).
func startRouter(t *testing.T, cp *ControlPlane, bfd bool, agentArgs ...string) *frr.Router {
	t.Helper()
	var conf strings.Builder
	fmt.Fprintf(&conf, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n", routerASN, cp.Client.IP)
	for _, n := range cp.Nodes {
		fmt.Fprintf(&conf, " neighbor %s remote-as %d\n neighbor %s timers connect 1\n", n.Host.IP, nodeASN, n.Host.IP)
		if bfd {
			fmt.Fprintf(&conf, " neighbor %s bfd profile cp\n", n.Host.IP)
		}
	}
	for _, afi := range []string{"ipv4", "ipv6"} {
		fmt.Fprintf(&conf, " address-family %s unicast\n", afi)
		for _, n := range cp.Nodes {
			fmt.Fprintf(&conf, "  neighbor %s activate\n", n.Host.IP)
		}
		conf.WriteString(" exit-address-family\n")
	}
	opts := frr.Options{Netns: cp.Client.Netns, Dir: filepath.Join(cp.Dir, "frr"), Name: "router", Config: conf.String()}
	if bfd {
		opts.BFD, opts.BFDConfig = true, bfdProfile
	}
	router := frr.StartT(t, opts)
	args := append([]string{fmt.Sprintf("--bgp-local-asn=%d", nodeASN), fmt.Sprintf("--bgp-peers=%s=%d", cp.Client.IP, routerASN)}, agentArgs...)
	for _, n := range cp.Nodes {
		if err := n.StartAgent(args...); err != nil {
			t.Fatal(err)
		}
	}
	return router
}

// With bgp-local-asn, the owner also advertises the VIPs to a router
// (FRR, in the client's namespace): both VIPs, from the owner only, and
// from the new owner once the old one gave them up.
func TestHeraldBGP(t *testing.T) {
	cp := upT(t, Options{})
	router := startRouter(t, cp, false)
	owner := settle(t, cp)
	waitRoutes(t, router, owner)

	if err := owner.KillAPIServer(); err != nil {
		t.Fatal(err)
	}
	waitRoutes(t, router, waitTakeover(t, cp, owner))
	if err := owner.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
}

// waitRoutes waits until the router has each VIP from owner alone.
func waitRoutes(t *testing.T, router *frr.Router, owner *CPNode) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		why := ""
		for afi, vip := range map[string]netip.Addr{"ipv4": VIP, "ipv6": VIP6} {
			rib, err := router.RIB(afi)
			if err != nil {
				t.Fatal(err)
			}
			paths := rib[netip.PrefixFrom(vip, vip.BitLen())]
			if len(paths) != 1 || paths[0].Peer() != owner.Host.IP {
				why += fmt.Sprintf("%s: %d paths %+v; ", vip, len(paths), paths)
			}
		}
		if why == "" {
			t.Logf("the router has both VIPs from %s alone", owner.Name)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("want both VIPs from %s (%s) alone: %s\n%s", owner.Name, owner.Host.IP, why, router.LogTail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// With bgp-bfd-interval, the router drops a frozen owner's routes when
// BFD says the node is gone, not when the hold time (a minute here) runs
// out: the new owner's are then the only ones.
func TestHeraldBGPBFD(t *testing.T) {
	cp := upT(t, Options{})
	router := startRouter(t, cp, true, "--bgp-bfd-interval=100ms", "--bgp-hold-time=60s")
	owner := settle(t, cp)
	waitRoutes(t, router, owner)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := router.WaitBFDPeers(ctx, func(ps map[string]frr.BFDPeer) bool {
		up := 0
		for _, n := range cp.Nodes {
			if ps[n.Host.IP.String()].Status == "up" {
				up++
			}
		}
		return up == len(cp.Nodes)
	}); err != nil {
		t.Fatalf("BFD sessions with every node: %v", err)
	}

	if err := owner.Freeze(); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	defer func() {
		if err := owner.Thaw(); err != nil {
			t.Error(err)
		}
	}()
	// Well inside the hold time: only BFD can have ended the session.
	waitNoPathFrom(t, router, owner, 10*time.Second)
	t.Logf("the router dropped %s's routes %s after it froze", owner.Name, time.Since(frozen).Round(10*time.Millisecond))
	waitRoutes(t, router, waitTakeover(t, cp, owner))
}

// waitTakeover waits until another node than owner answers the IPv4 VIP,
// and returns it.
func waitTakeover(t *testing.T, cp *ControlPlane, owner *CPNode) *CPNode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	w, err := cp.WatchVIP(ctx, VIP, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil && (w.Current() == "" || w.Current() == owner.MAC()) {
		time.Sleep(20 * time.Millisecond)
	}
	next := cp.Node(cp.NodeByMAC(w.Current()))
	w.Stop()
	if next == nil {
		t.Fatalf("nobody took over from %s", owner.Name)
	}
	return next
}

// waitNoPathFrom waits until the router has no path to either VIP from n.
func waitNoPathFrom(t *testing.T, router *frr.Router, n *CPNode, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := 0
		for afi, vip := range map[string]netip.Addr{"ipv4": VIP, "ipv6": VIP6} {
			rib, err := router.RIB(afi)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range rib[netip.PrefixFrom(vip, vip.BitLen())] {
				if p.Peer() == n.Host.IP {
					left++
				}
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the router still has %d paths to the VIPs from %s after %s\n%s", left, n.Name, within, router.LogTail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
