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

// With bgp-local-asn, the owner also advertises the VIPs to a router
// (FRR, in the client's namespace): both VIPs, from the owner only, and
// from the new owner once the old one gave them up.
func TestHeraldBGP(t *testing.T) {
	const routerASN, nodeASN = 65000, 65010
	cp := upT(t, Options{})
	var conf strings.Builder
	fmt.Fprintf(&conf, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n", routerASN, cp.Client.IP)
	for _, n := range cp.Nodes {
		fmt.Fprintf(&conf, " neighbor %s remote-as %d\n neighbor %s timers connect 1\n", n.Host.IP, nodeASN, n.Host.IP)
	}
	for _, afi := range []string{"ipv4", "ipv6"} {
		fmt.Fprintf(&conf, " address-family %s unicast\n", afi)
		for _, n := range cp.Nodes {
			fmt.Fprintf(&conf, "  neighbor %s activate\n", n.Host.IP)
		}
		conf.WriteString(" exit-address-family\n")
	}
	router := frr.StartT(t, frr.Options{Netns: cp.Client.Netns, Dir: filepath.Join(cp.Dir, "frr"), Name: "router", Config: conf.String()})
	bgp := []string{fmt.Sprintf("--bgp-local-asn=%d", nodeASN), fmt.Sprintf("--bgp-peers=%s=%d", cp.Client.IP, routerASN)}
	for _, n := range cp.Nodes {
		if err := n.StartAgent(bgp...); err != nil {
			t.Fatal(err)
		}
	}
	owner := settle(t, cp)
	waitRoutes(t, router, owner)

	if err := owner.KillAPIServer(); err != nil {
		t.Fatal(err)
	}
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
	waitRoutes(t, router, next)
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
