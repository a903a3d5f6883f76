package k8sclient

import (
	"github.com/cilium/hive/cell"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
)

// newEventRecorder records Events on Services and pools. Events go out
// asynchronously, so a slow API server never blocks a decision. Cells pass
// object references, so the recorder needs no scheme of our types. The
// source names the node, as a kubelet's Events do: several agents may
// speak about one object.
func newEventRecorder(lc cell.Lifecycle, kube kubernetes.Interface, agent agentconfig.Config) record.EventRecorder {
	b := record.NewBroadcaster()
	lc.Append(cell.Hook{
		OnStart: func(cell.HookContext) error {
			b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
			return nil
		},
		OnStop: func(cell.HookContext) error {
			b.Shutdown()
			return nil
		},
	})
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "herald", Host: agent.Node()})
}
