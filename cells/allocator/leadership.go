package allocator

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/heraldlb/herald/daemon/agentconfig"
)

// leadership runs lead for as long as this agent is the LB IPAM leader.
type leadership interface {
	Run(ctx context.Context, health cell.Health, lead func(ctx context.Context))
}

// Leader election timings; the same as the common controller defaults.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// leaseLeadership elects through the Lease LeaseName with client-go's
// leaderelection. Losing the Lease stops the agent: its tables would be
// stale, and a fresh start re-imports everything from Service status.
type leaseLeadership struct {
	kube       kubernetes.Interface
	agent      agentconfig.Config
	log        *slog.Logger
	shutdowner hive.Shutdowner
}

func newLeaseLeadership(kube kubernetes.Interface, agent agentconfig.Config, log *slog.Logger, sd hive.Shutdowner) leadership {
	return &leaseLeadership{kube: kube, agent: agent, log: log, shutdowner: sd}
}

func (l *leaseLeadership) Run(ctx context.Context, health cell.Health, lead func(ctx context.Context)) {
	identity := l.agent.Node()
	lease := l.agent.K8sNamespace + "/" + LeaseName
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: LeaseName, Namespace: l.agent.K8sNamespace},
			Client:     l.kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: true,
		Name:            LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				l.log.Info("Became LB IPAM leader", "lease", lease, "identity", identity)
				health.OK("leading")
				lead(ctx)
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					l.log.Error("Lost LB IPAM leadership, stopping the agent", "lease", lease)
					l.shutdowner.Shutdown(hive.ShutdownWithError(errors.New("lost the LB IPAM lease " + lease)))
				}
			},
			OnNewLeader: func(id string) {
				if id != identity {
					l.log.Info("LB IPAM leader elected", "leader", id)
					health.OK("following " + id)
				}
			},
		},
	})
	if err != nil {
		// Only a programming error in the configuration above gets here.
		l.shutdowner.Shutdown(hive.ShutdownWithError(err))
		return
	}
	health.OK("campaigning")
	le.Run(ctx)
}
