package election

import (
	"context"
	"time"

	"github.com/cilium/hive/cell"
)

// bindRetry: how often the election tries again to bind its address and
// port.
const bindRetry = time.Second

// bindTransport starts the election's transport, and tries again until
// it can: this node's address in --peers may come up after the agent
// (DHCP at boot), and another process may hold peer-port for a while.
// Giving up would leave the agent running without ever voting or
// answering, and neither systemd nor the kubelet would restart it. Until
// then the node is no candidate and says so, once per distinct error.
// Returns nil when ctx ends first.
func (r *runner) bindTransport(ctx context.Context, health cell.Health) *transport {
	failing := ""
	for {
		tr, err := startTransport(r.Log, r.cfg.Self, r.cfg.Addr, r.Config.PeerPort, r.secret)
		if err == nil {
			if failing != "" {
				r.Log.Info("The election's address and port are bound: this node takes part again")
				r.m.configErrors.WithLabelValues("transport").Set(0)
			}
			return tr
		}
		health.Degraded("transport", err)
		if err.Error() != failing {
			r.Log.Error("Cannot bind the election's address and port (is this node's address in peers on the node, and is peer-port free?); this node takes no part in the election, tries again every second",
				"error", err)
			r.m.configErrors.WithLabelValues("transport").Set(1)
			failing = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(bindRetry):
		}
	}
}
