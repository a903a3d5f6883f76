package members

import (
	"context"
	"net/netip"
	"time"

	"github.com/cilium/hive/cell"
)

// startRetry: how often the member protocol tries again to bind its port.
const startRetry = time.Second

// startRetrying starts the member protocol, and tries again until it can:
// another process may hold the peer port for a while (an agent being
// replaced on the same node, a port given to something else by mistake).
// Giving up would leave the agent running without ever taking part in L2
// announcements, and nothing would restart it. Until then the node takes
// no part and says so, once per distinct error. It reports whether the
// protocol started (false when ctx ended first).
func (r *runner) startRetrying(ctx context.Context, health cell.Health, advertise netip.Addr, port int, secret []byte) bool {
	failing := ""
	for {
		err := r.m.start(advertise, port, secret)
		if err == nil {
			return true
		}
		health.Degraded("member protocol", err)
		if err.Error() != failing {
			r.Log.Error("Cannot start the member protocol (is l2-announcements-peer-port free on this node?); this node takes no part in L2 announcements, tries again every second",
				"port", port, "error", err)
			failing = err.Error()
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(startRetry):
		}
	}
}
