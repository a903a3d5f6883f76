package leaseelection

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/cilium/hive/job"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// gcInterval is how often each agent looks for abandoned Leases: one LIST
// per node and interval, whatever the number of Services.
const gcInterval = time.Minute

func registerLeaseGC(jobs job.Group, agent agentconfig.Config, l2 l2config.Config, cfg l2config.L2Leases, kube kubernetes.Interface, log *slog.Logger) {
	// The members election deletes the Leases of gone groups itself; its
	// Leases are not renewed, so age says nothing about them.
	if !l2.Runs(l2config.ElectionLease) {
		return
	}
	jobs.Add(job.Timer("lease-gc", func(ctx context.Context) error {
		return collectLeases(ctx, kube, agent.K8sNamespace, cfg.L2AnnouncementsLeaseDuration, time.Now(), log)
	}, gcInterval))
}

// collectLeases deletes announcement Leases nobody holds any more: released
// ones (no holder) and ones whose holder stopped renewing long ago. A Lease
// someone campaigns for is held again within a retry period, so only the
// Leases of Services no node announces any more stay abandoned. Deletion is
// guarded by the resourceVersion: a Lease taken meanwhile survives.
func collectLeases(ctx context.Context, kube kubernetes.Interface, ns string, leaseDuration time.Duration, now time.Time, log *slog.Logger) error {
	leases, err := kube.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range leases.Items {
		l := &leases.Items[i]
		if !strings.HasPrefix(l.Name, tables.L2AnnounceLeasePrefix) || !abandoned(l, leaseDuration, now) {
			continue
		}
		rv := l.ResourceVersion
		err := kube.CoordinationV1().Leases(ns).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err == nil {
			log.Info("Deleted abandoned announcement lease", "lease", ns+"/"+l.Name)
		}
	}
	return nil
}

// abandoned: nobody has renewed the Lease for ten lease durations (at least
// a minute), or it was released and not taken for two.
func abandoned(l *coordinationv1.Lease, leaseDuration time.Duration, now time.Time) bool {
	var last time.Time
	switch {
	case l.Spec.RenewTime != nil:
		last = l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		last = l.Spec.AcquireTime.Time
	default:
		last = l.CreationTimestamp.Time
	}
	idle := now.Sub(last)
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return idle > 2*leaseDuration
	}
	return idle > max(10*leaseDuration, time.Minute)
}
