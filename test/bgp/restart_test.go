package bgp

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Graceful restart: the agent killed with -9 or stopped (SIGTERM, as in
// an upgrade; its sessions end without a NOTIFICATION either way), FRR
// keeps the node's paths, marked stale, until the agent is back and has
// sent them again with its End-of-RIB; nothing is withdrawn on the way.
func TestGracefulRestart(t *testing.T) {
	ensureAgents(t)
	_, p := advertisedService(t, "web")
	for _, how := range []struct {
		name string
		stop func(*node) error
	}{
		{"kill -9", func(n *node) error { return n.Kill9() }},
		{"SIGTERM", func(n *node) error { return n.Stop() }},
	} {
		t.Run(how.name, func(t *testing.T) { restartKeepsRoutes(t, p, nodes[0], how.stop) })
	}
}

func restartKeepsRoutes(t *testing.T, p netip.Prefix, victim *node, stop func(*node) error) {
	t.Helper()
	if err := stop(victim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node1's path to turn stale", func() (bool, string) {
		paths, err := pathsOf(p)
		if err != nil {
			return false, err.Error()
		}
		for _, path := range paths {
			if path.PeerID == victim.host.IP.String() && path.Stale {
				return len(paths) == len(nodes), describe(paths)
			}
		}
		return false, describe(paths)
	})
	// The data plane keeps all three next hops meanwhile.
	waitKernelECMP(t, p, nodes...)

	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	waitAdvertisedBy(t, p, nodes...) // fresh again: no path stale
}

// A Service created while an agent is down is advertised by that agent once
// it is back, and one deleted meanwhile is withdrawn by it: a restarted
// agent starts from what the API server says, not from what it had.
func TestRestartCatchesUp(t *testing.T) {
	ensureAgents(t)
	ns, old := advertisedService(t, "old")

	victim := nodes[1]
	if err := victim.Kill9(); err != nil {
		t.Fatal(err)
	}
	// (Created before the other goes, so that it gets another address:
	// FRR keeps the down node's stale path of the old one meanwhile.)
	createService(t, ns, "new", singleStack(corev1.IPv4Protocol))
	fresh := hostPrefix(waitVIP(t, ns, "new"))
	deleteService(t, ns, "old")
	waitAdvertisedBy(t, fresh, nodes[0], nodes[2])

	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	waitAdvertisedBy(t, fresh, nodes...)
	waitWithdrawn(t, old)
}
