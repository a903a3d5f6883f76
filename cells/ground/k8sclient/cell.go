// Package k8sclient provides the Kubernetes clients every other cell uses,
// rate limited by k8s-client-qps / k8s-client-burst, and an Event recorder.
//
// Reads: the kubeconfig (or the in-cluster service account).
// Writes: nothing; provides kubernetes.Interface (protobuf, rate limited),
// kubeclient.Unthrottled (protobuf, for the LB IPAM allocator's status
// writes), versioned.Interface (JSON, rate limited), record.EventRecorder,
// and the gate (cells/internal/reconnect) that holds the watches while the
// API server is unreachable and probes its /readyz.
package k8sclient

import (
	"time"

	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/internal/reconnect"
)

// Config of the Kubernetes clients.
type Config struct {
	Kubeconfig     string  // kubeconfig
	K8sClientQPS   float32 // k8s-client-qps
	K8sClientBurst int     // k8s-client-burst
	// K8sReconnectSpread: once the API server is ready again after it was
	// unreachable, each watch of the agent reconnects after a random delay
	// below it (cells/internal/reconnect).
	K8sReconnectSpread time.Duration // k8s-reconnect-spread
}

// Defaults leave room for LB IPAM's status writes: at the client-go default
// of 5 QPS, giving 1000 new Services their IPs would take over three minutes.
var Defaults = Config{K8sClientQPS: 100, K8sClientBurst: 200, K8sReconnectSpread: reconnect.Defaults.Spread}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("kubeconfig", def.Kubeconfig, "Path to a kubeconfig; empty means the in-cluster service account")
	flags.Float32("k8s-client-qps", def.K8sClientQPS, "Queries per second the agent may send to the API server (sustained)")
	flags.Int("k8s-client-burst", def.K8sClientBurst, "Queries the agent may send to the API server in a burst")
	flags.Duration("k8s-reconnect-spread", def.K8sReconnectSpread,
		"Once the API server is ready again after it was unreachable, each watch reconnects after a random delay below this; larger spreads the agents of a big cluster over a longer window")
}

var Cell = cell.Module(
	"k8s-client",
	"Kubernetes API clients",

	cell.Config(Defaults),
	cell.Provide(newClients, newEventRecorder, newGate),
)
