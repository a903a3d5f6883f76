package leaseelection

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// gcInterval is how often each agent looks for abandoned Leases: one LIST
// per node and interval, whatever the number of Services.
const gcInterval = time.Minute

// Which Leases each collection looks at: the Lease election's own, and,
// once the feature is off, every Lease L2 announcements write.
var (
	announcementLeases = []string{tables.L2AnnounceLeasePrefix}
	allL2Leases        = []string{tables.L2AnnounceLeasePrefix, tables.L2NodeLeasePrefix, tables.L2WitnessLeasePrefix}
)

func registerLeaseGC(jobs job.Group, agent agentconfig.Config, l2 l2config.Config, cfg l2config.L2Leases, kube kubernetes.Interface, log *slog.Logger) {
	ns, d := agent.K8sNamespace, cfg.L2AnnouncementsLeaseDuration
	switch {
	case !l2.EnableL2Announcements:
		// What an earlier run left behind is abandoned once nobody renews
		// it: cleaned up as Cilium's agent does after the feature is turned
		// off, and until none is left, so that the Leases the last agents
		// of a rollout release are collected too. An agent that still runs
		// the feature keeps renewing its own, which therefore stay.
		jobs.Add(job.OneShot("lease-gc-feature-off", func(ctx context.Context, _ cell.Health) error {
			collectUntilNone(ctx, kube, ns, d, gcInterval, log)
			return nil
		}))
	case l2.Runs(l2config.ElectionLease):
		// The members election deletes the Leases of gone groups itself;
		// its Leases are not renewed, so age says nothing about them.
		jobs.Add(job.Timer("lease-gc", func(ctx context.Context) error {
			_, err := collectLeases(ctx, kube, ns, announcementLeases, d, time.Now(), log)
			return err
		}, gcInterval))
	}
}

// collectUntilNone collects every L2 Lease, every interval, until none is
// left. An agent without the right to list Leases has nothing to clean:
// the feature never ran with its role.
func collectUntilNone(ctx context.Context, kube kubernetes.Interface, ns string, leaseDuration, interval time.Duration, log *slog.Logger) {
	for {
		left, err := collectLeases(ctx, kube, ns, allL2Leases, leaseDuration, time.Now(), log)
		switch {
		case apierrors.IsForbidden(err):
			log.Info("Not collecting the Leases of L2 announcements: the agent may not list Leases", "namespace", ns, "error", err)
			return
		case err != nil:
			log.Warn("Collecting the Leases L2 announcements left behind failed; trying again", "namespace", ns, "error", err)
		case left == 0:
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// collectLeases deletes the Leases under prefixes that nobody holds any
// more: released ones (no holder) and ones whose holder stopped renewing
// long ago. A Lease someone campaigns for is held again within a retry
// period, so only the Leases of Services no node announces any more stay
// abandoned. Deletion is guarded by the resourceVersion: a Lease taken
// meanwhile survives. It returns how many of those Leases are left.
func collectLeases(ctx context.Context, kube kubernetes.Interface, ns string, prefixes []string, leaseDuration time.Duration, now time.Time, log *slog.Logger) (left int, err error) {
	leases, err := kube.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	for i := range leases.Items {
		l := &leases.Items[i]
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(l.Name, p) }) {
			continue
		}
		left++
		if !abandoned(l, leaseDuration, now) {
			continue
		}
		rv := l.ResourceVersion
		err := kube.CoordinationV1().Leases(ns).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err == nil || apierrors.IsNotFound(err) {
			left--
		}
		if err == nil {
			log.Info("Deleted abandoned announcement lease", "lease", ns+"/"+l.Name)
		}
	}
	return left, nil
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
