package bgp

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/heraldlb/herald/test/frr"
)

// peerMetrics are a node's herald_bgp_* series of one session.
type peerMetrics struct {
	up, established              float64
	advertised, received         map[string]float64 // by afi
	updatesSent, updatesReceived float64
}

func scrapePeer(n *node, peer string) (peerMetrics, error) {
	m, err := n.Metrics()
	if err != nil {
		return peerMetrics{}, err
	}
	l := map[string]string{"peer": peer}
	pm := peerMetrics{advertised: map[string]float64{}, received: map[string]float64{}}
	pm.up, _ = m.Value("herald_bgp_session_up", l)
	pm.established, _ = m.Value("herald_bgp_session_state", map[string]string{"peer": peer, "state": "established"})
	pm.updatesSent, _ = m.Value("herald_bgp_updates_sent_total", l)
	pm.updatesReceived, _ = m.Value("herald_bgp_updates_received_total", l)
	for _, afi := range []string{"ipv4", "ipv6"} {
		fl := map[string]string{"peer": peer, "afi": afi, "safi": "unicast"}
		pm.advertised[afi], _ = m.Value("herald_bgp_routes_advertised", fl)
		pm.received[afi], _ = m.Value("herald_bgp_routes_received", fl)
	}
	return pm, nil
}

// metricsMatchRouter compares a node's series of peer tor4 (IPv4, both
// families) with FRR's view of the same session; it returns both.
func metricsMatchRouter(n *node) (bool, string, peerMetrics, frr.Neighbor) {
	pm, err := scrapePeer(n, "tor4")
	if err != nil {
		return false, err.Error(), pm, frr.Neighbor{}
	}
	nbrs, err := router.Neighbors()
	if err != nil {
		return false, err.Error(), pm, frr.Neighbor{}
	}
	nb := nbrs[n.host.IP.String()]
	msg := fmt.Sprintf("%s: metrics %+v; FRR: %s, accepted %v, sent %v", n.Name, pm, nb.State, nb.AcceptedPrefixes, nb.SentPrefixes)
	if nb.State != "Established" || pm.up != 1 || pm.established != 1 {
		return false, msg, pm, nb
	}
	for afi, frrAF := range map[string]string{"ipv4": "ipv4Unicast", "ipv6": "ipv6Unicast"} {
		if nb.AcceptedPrefixes[frrAF] == 0 || int(pm.advertised[afi]) != nb.AcceptedPrefixes[frrAF] ||
			int(pm.received[afi]) != nb.SentPrefixes[frrAF] {
			return false, msg, pm, nb
		}
	}
	return true, msg, pm, nb
}

// The per-peer metrics say what FRR sees of the same session, IPv6 routes
// over an IPv4 session included: with tor4 the only peer, of both
// families, each node's herald_bgp_routes_advertised per family is what
// FRR accepted from it, herald_bgp_routes_received what FRR sends it,
// and the session is up on both sides. A new Service's route costs as
// many UPDATE messages on the node's counter as FRR received, and the
// other way round.
func TestMetricsMatchRouter(t *testing.T) {
	ensureAgents(t)
	useMultiprotocolPeer(t)
	ns := newNamespace(t)
	createService(t, ns, "m4", singleStack(corev1.IPv4Protocol))
	createService(t, ns, "m6", singleStack(corev1.IPv6Protocol))
	waitAdvertisedBy(t, hostPrefix(waitVIP(t, ns, "m4")), nodes...)
	waitAdvertisedOverIPv4(t, hostPrefix(waitVIP(t, ns, "m6")), nodes...)

	// The baseline: the counters of both sides once they stopped moving.
	// The agent's lag the router's by up to a refresh of bgp-peers (2 s),
	// so a count is taken as settled once it has not changed for longer.
	before := map[string]peerMetrics{}
	frrBefore := map[string]frr.Neighbor{}
	for _, n := range nodes {
		var last [4]int
		var since time.Time
		waitFor(t, n.Name+"'s metrics to match FRR's view, and its counters to settle", func() (bool, string) {
			ok, msg, pm, nb := metricsMatchRouter(n)
			now := [4]int{int(pm.updatesSent), int(pm.updatesReceived), nb.UpdatesReceived, nb.UpdatesSent}
			if !ok || now != last {
				last, since = now, time.Now()
				return false, msg
			}
			before[n.Name], frrBefore[n.Name] = pm, nb
			return time.Since(since) > 3*time.Second, msg
		})
	}

	createService(t, ns, "m6b", singleStack(corev1.IPv6Protocol))
	vip := hostPrefix(waitVIP(t, ns, "m6b"))
	waitAdvertisedOverIPv4(t, vip, nodes...)
	for _, n := range nodes {
		waitFor(t, n.Name+"'s UPDATE counters to grow as FRR's", func() (bool, string) {
			ok, msg, pm, nb := metricsMatchRouter(n)
			if !ok {
				return false, msg
			}
			b, fb := before[n.Name], frrBefore[n.Name]
			sent, recv := pm.updatesSent-b.updatesSent, pm.updatesReceived-b.updatesReceived
			frrRecv, frrSent := nb.UpdatesReceived-fb.UpdatesReceived, nb.UpdatesSent-fb.UpdatesSent
			return sent >= 1 && int(sent) == frrRecv && int(recv) == frrSent,
				fmt.Sprintf("%s sent %v UPDATEs more, FRR received %d more; %s received %v more, FRR sent %d more",
					n.Name, sent, frrRecv, n.Name, recv, frrSent)
		})
	}
}
