package election

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/cells/internal/withdraw"
	"github.com/heraldlb/herald/tables"
)

// What taking and giving up the VIPs does on this node: the VIPs become
// local addresses of the host (a local route, so the API server accepts
// their traffic) and the responder's entries; the fence deadline is the
// election's.

// routeProtocol marks Herald's VIP routes (ip route ... proto 72, unassigned in iproute2 and FRR), so a
// restarted agent finds and removes what an earlier run left.
const routeProtocol = 72

func vipRoute(vip netip.Addr, ifindex int) *netlink.Route {
	return &netlink.Route{
		LinkIndex: ifindex,
		Dst:       &net.IPNet{IP: vip.AsSlice(), Mask: net.CIDRMask(vip.BitLen(), vip.BitLen())},
		Type:      unix.RTN_LOCAL,
		Table:     unix.RT_TABLE_LOCAL,
		Scope:     netlink.SCOPE_HOST,
		Protocol:  routeProtocol,
	}
}

// addRoutes makes the VIPs local: the host accepts their packets, as it
// does its own addresses, without them being addresses of any device
// (the route names the device each VIP is answered on). So the kernel
// itself never answers ARP for them (with arp_ignore 1 on the device, see
// quietKernel) nor NDP: only the responder does, while the election lets
// it. A failure takes back what was added.
func addRoutes(entries []*tables.L2AnnounceEntry) error {
	for _, e := range entries {
		if err := netlink.RouteReplace(vipRoute(e.IP, e.Ifindex)); err != nil {
			err = fmt.Errorf("adding the local route of %s on %s: %w", e.IP, e.NetworkInterface, err)
			return errors.Join(err, removeRoutes())
		}
	}
	return nil
}

// removeRoutes removes every VIP route (protocol routeProtocol in the
// local table), this run's or an earlier one's.
func removeRoutes() error {
	var errs []error
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := netlink.RouteListFiltered(family, &netlink.Route{Table: unix.RT_TABLE_LOCAL, Protocol: routeProtocol},
			netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing the VIP routes: %w", err))
			continue
		}
		for _, r := range routes {
			if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("removing the local route of %s: %w", r.Dst, err))
			}
		}
	}
	return errors.Join(errs...)
}

// quietKernel sets arp_ignore to 1 on the devices IPv4 VIPs are answered
// on, where it is 0: the kernel then answers ARP only for addresses of the
// device itself, never for the VIPs' local routes. Without it a node whose
// agent was killed, or is frozen, would still answer with the kernel while
// another node owns the VIP. It returns the devices it changed.
func quietKernel(sysctlDir string, entries []*tables.L2AnnounceEntry) ([]string, error) {
	var changed []string
	seen := map[string]bool{}
	for _, e := range entries {
		if !e.IP.Is4() || seen[e.NetworkInterface] {
			continue
		}
		seen[e.NetworkInterface] = true
		path := filepath.Join(sysctlDir, "net/ipv4/conf", e.NetworkInterface, "arp_ignore")
		b, err := os.ReadFile(path)
		if err != nil {
			return changed, fmt.Errorf("reading %s: %w", path, err)
		}
		if strings.TrimSpace(string(b)) != "0" {
			continue
		}
		if err := os.WriteFile(path, []byte("1"), 0o644); err != nil {
			return changed, fmt.Errorf("setting %s to 1 (is sysctl-dir the host's /proc/sys, writable?): %w", path, err)
		}
		changed = append(changed, e.NetworkInterface)
	}
	return changed, nil
}

// writeEntries puts the VIPs into l2-announce for the responder, with the
// deadline it answers until.
func writeEntries(db *statedb.DB, announce statedb.RWTable[*tables.L2AnnounceEntry], health statedb.RWTable[*tables.L2LeaseHealth],
	self string, entries []*tables.L2AnnounceEntry, until time.Time) {
	wtxn := db.WriteTxn(announce, health)
	for _, e := range entries {
		c := e.Clone()
		c.Status = reconciler.StatusPending()
		_, _, _ = announce.Insert(wtxn, c)
	}
	_, _, _ = health.Insert(wtxn, &tables.L2LeaseHealth{Node: self, HeldLeases: len(entries), FreshUntil: until})
	wtxn.Commit()
}

// renewDeadline moves the responder's deadline.
func renewDeadline(db *statedb.DB, health statedb.RWTable[*tables.L2LeaseHealth], self string, held int, until time.Time) {
	wtxn := db.WriteTxn(health)
	_, _, _ = health.Insert(wtxn, &tables.L2LeaseHealth{Node: self, HeldLeases: held, FreshUntil: until})
	wtxn.Commit()
}

// markWithdrawn asks the responder to take every entry out of its maps.
func markWithdrawn(db *statedb.DB, announce statedb.RWTable[*tables.L2AnnounceEntry]) {
	wtxn := db.WriteTxn(announce)
	withdraw.All(wtxn, announce)
	wtxn.Commit()
}

// withdrawn reports whether the responder confirmed every entry out of
// its maps, and a channel that closes when that may have changed.
func withdrawn(db *statedb.DB, announce statedb.RWTable[*tables.L2AnnounceEntry]) (bool, <-chan struct{}) {
	all, watch := announce.AllWatch(db.ReadTxn())
	for e := range all {
		if !e.Out() {
			return false, watch
		}
	}
	return true, watch
}

// clearEntries removes the (withdrawn) entries and the deadline.
func clearEntries(db *statedb.DB, announce statedb.RWTable[*tables.L2AnnounceEntry], health statedb.RWTable[*tables.L2LeaseHealth], self string) {
	wtxn := db.WriteTxn(announce, health)
	_ = announce.DeleteAll(wtxn)
	_, _, _ = health.Insert(wtxn, &tables.L2LeaseHealth{Node: self})
	wtxn.Commit()
}
