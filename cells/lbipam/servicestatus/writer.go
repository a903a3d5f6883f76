package servicestatus

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/apply"

	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
)

// Event reasons on Services.
const (
	EventAssigned = "IPAllocated"
	EventReleased = "IPReleased"
	EventPending  = "IPAllocationPending"
	// EventDisagree says a MetalLB annotation is ignored because the
	// Cilium annotation for the same thing says otherwise.
	EventDisagree = "AnnotationsDisagree"
)

// parallelWrites bounds the status writes in flight: enough to keep up with
// a burst of new Services, few enough not to swamp the API server.
const parallelWrites = 16

type statusWriter struct {
	fence    leader.WriteFence
	kube     kubernetes.Interface
	services statedb.Table[*tables.Service]
	events   eventf
	// wrote is called as each status write goes out (nil: nothing to tell).
	wrote   func()
	log     *slog.Logger
	now     func() time.Time
	latency prometheus.Histogram
}

func (w *statusWriter) Update(ctx context.Context, txn statedb.ReadTxn, _ statedb.Revision, a *tables.LBAllocation) error {
	svc, _, ok := w.services.Get(txn, tables.ServiceKeyIndex.Query(a.Key()))
	if !ok || svc.UID == "" {
		return nil // deleted meanwhile; nothing to write
	}
	if upToDate(a, svc) {
		return nil
	}
	wctx, cancel, err := w.fence(ctx, a.Term)
	if err != nil {
		return fmt.Errorf("service %s: %w", a.Key(), err)
	}
	defer cancel()
	if w.wrote != nil {
		w.wrote()
	}
	if err := w.apply(wctx, a, svc); err != nil {
		return fmt.Errorf("service %s: %w", a.Key(), err)
	}
	w.recordEvents(a, svc)
	return nil
}

// apply writes the decision with server-side apply. Only the fields Herald
// owns are touched: other conditions and other managers' fields stay, and
// an apply without ingress or condition removes Herald's. The apply is
// conditional on the resourceVersion the decision was checked against: if
// anyone (a newer leader above all) wrote the Service since, it fails with
// a conflict and is retried from the new version.
func (w *statusWriter) apply(ctx context.Context, a *tables.LBAllocation, svc *tables.Service) error {
	status := corev1ac.ServiceStatus()
	lb := corev1ac.LoadBalancerStatus()
	if a.Managed {
		for _, ip := range a.IPs {
			lb.WithIngress(corev1ac.LoadBalancerIngress().
				WithIP(ip.Addr.String()).
				// The API server defaults ipMode to VIP; setting it keeps the
				// next read equal to what was written.
				WithIPMode(corev1.LoadBalancerIPModeVIP))
		}
		status.WithConditions(conditionAC(desiredCondition(a, svc, w.now())))
		if c, ok := desiredDisagreement(a, svc, w.now()); ok {
			status.WithConditions(conditionAC(c))
		}
	}
	status.WithLoadBalancer(lb)
	cfg := corev1ac.Service(a.Name, a.Namespace).WithResourceVersion(svc.ResourceVersion).WithStatus(status)
	// What the typed ApplyStatus sends, without what it does besides:
	// decoding the Service the API server sends back, which nobody reads,
	// and building the query through the parameter codec's reflection.
	// Those were a twentieth of the agent's CPU while 5000 new Services got
	// their IPs. The body is the library's (apply.NewRequest).
	req, err := apply.NewRequest(w.kube.CoreV1().RESTClient(), cfg)
	if err != nil {
		return err
	}
	return req.Namespace(a.Namespace).Resource("services").Name(a.Name).SubResource("status").
		Param("fieldManager", tables.HeraldFieldManager).Param("force", "true").
		Do(ctx).Error()
}

func conditionAC(c metav1.Condition) *metav1ac.ConditionApplyConfiguration {
	return metav1ac.Condition().
		WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).WithMessage(c.Message).
		WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(c.LastTransitionTime)
}

func (w *statusWriter) recordEvents(a *tables.LBAllocation, svc *tables.Service) {
	ref := &corev1.ObjectReference{
		Kind: "Service", APIVersion: "v1", Namespace: svc.Namespace, Name: svc.Name, UID: types.UID(svc.UID),
	}
	want := a.Addrs()
	if !a.Managed {
		want = nil
	}
	var added []string
	for _, ip := range want {
		if !slices.Contains(svc.IngressIPs, ip) {
			added = append(added, ip.String())
		}
	}
	for _, ip := range svc.IngressIPs {
		if !slices.Contains(want, ip) {
			w.events.Eventf(ref, corev1.EventTypeNormal, EventReleased, "Released IP %s: %s", ip, releaseReason(a, ip))
		}
	}
	if len(added) > 0 {
		w.events.Eventf(ref, corev1.EventTypeNormal, EventAssigned, "Assigned IP %s", strings.Join(added, ", "))
		if len(svc.IngressIPs) == 0 && !svc.CreationTimestamp.IsZero() {
			w.latency.Observe(w.now().Sub(svc.CreationTimestamp).Seconds())
		}
	}
	if old, ok := svc.Condition(tables.ConditionAnnotationsDisagree); a.Managed && a.Disagreement != "" && (!ok || old.Message != a.Disagreement) {
		w.log.Warn("Service annotations disagree; the Cilium annotation applies",
			"service", a.Key(), "disagreement", a.Disagreement)
		w.events.Eventf(ref, corev1.EventTypeWarning, EventDisagree, "%s", a.Disagreement)
	}
	if a.Managed && !a.Satisfied {
		old, ok := svc.Condition(tables.ConditionRequestSatisfied)
		if !ok || old.Reason != a.Reason || old.Message != a.Message {
			w.events.Eventf(ref, corev1.EventTypeWarning, EventPending, "%s: %s", a.Reason, a.Message)
		}
	}
}

func releaseReason(a *tables.LBAllocation, ip netip.Addr) string {
	if !a.Managed {
		return "the service is no longer handled by LB IPAM"
	}
	for _, r := range a.Released {
		if r.Addr == ip {
			return r.Reason
		}
	}
	return "no longer allocated"
}

// Delete runs when a Service's decision is dropped, which happens when the
// Service itself is gone: there is nothing left to clean.
func (w *statusWriter) Delete(context.Context, statedb.ReadTxn, statedb.Revision, *tables.LBAllocation) error {
	return nil
}

func (w *statusWriter) Prune(context.Context, statedb.ReadTxn, iter.Seq2[*tables.LBAllocation, statedb.Revision]) error {
	return nil
}

// UpdateBatch writes a batch of statuses in parallel.
func (w *statusWriter) UpdateBatch(ctx context.Context, txn statedb.ReadTxn, batch []reconciler.BatchEntry[*tables.LBAllocation]) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallelWrites)
	for i := range batch {
		wg.Add(1)
		sem <- struct{}{}
		go func(e *reconciler.BatchEntry[*tables.LBAllocation]) {
			defer wg.Done()
			defer func() { <-sem }()
			e.Result = w.Update(ctx, txn, e.Revision, e.Object)
		}(&batch[i])
	}
	wg.Wait()
}

func (w *statusWriter) DeleteBatch(context.Context, statedb.ReadTxn, []reconciler.BatchEntry[*tables.LBAllocation]) {
}
