package k8sclient

import (
	"context"
	"log/slog"

	"github.com/cilium/hive/cell"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/cells/internal/reconnect"
)

// newGate is the agent's way back to the API server after it was
// unreachable (cells/internal/reconnect): one /readyz probe for the whole
// agent, shared by every watch.
func newGate(lc cell.Lifecycle, kube kubernetes.Interface, log *slog.Logger) *reconnect.Gate {
	life, stop := context.WithCancel(context.Background())
	lc.Append(cell.Hook{OnStop: func(cell.HookContext) error { stop(); return nil }})
	probe := func(ctx context.Context) error {
		_, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}
	return reconnect.New(life, reconnect.Defaults, probe, log)
}
