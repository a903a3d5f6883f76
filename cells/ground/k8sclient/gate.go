package k8sclient

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cilium/hive/cell"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/cells/internal/reconnect"
)

// newGate is the agent's way back to the API server after it was
// unreachable (cells/internal/reconnect): one /readyz probe for the whole
// agent, shared by every watch.
func newGate(lc cell.Lifecycle, cfg Config, kube kubernetes.Interface, log *slog.Logger) (*reconnect.Gate, error) {
	if cfg.K8sReconnectSpread < 0 {
		return nil, fmt.Errorf("k8s-reconnect-spread %s: must not be negative", cfg.K8sReconnectSpread)
	}
	life, stop := context.WithCancel(context.Background())
	lc.Append(cell.Hook{OnStop: func(cell.HookContext) error { stop(); return nil }})
	probe := func(ctx context.Context) error {
		_, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}
	policy := reconnect.Defaults
	policy.Spread = cfg.K8sReconnectSpread
	return reconnect.New(life, policy, probe, log), nil
}
