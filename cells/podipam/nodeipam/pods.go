package nodeipam

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

// Event reasons on Pods.
const (
	EventPoolExhausted = "IPPoolExhausted"
	EventPoolConflict  = "IPPoolConflict"
	EventPoolDeleting  = "IPPoolDeleting"
	EventPoolMaskSize  = "IPPoolMaskSizeUnusable"
	EventUnknownPool   = "IPPoolUnknown"
	EventBadAnnotation = "IPPoolAnnotationInvalid"
)

// choosePools picks, per enabled family, the pool the pod's address comes
// from, and checks the pool exists and has that family.
func (a *agent) choosePools(ctx context.Context, ref ipamv1.PodRef) (map[tables.Family]string, error) {
	podAnn, err := a.podAnnotations(ctx, ref)
	if err != nil {
		return nil, err
	}
	var nsAnn map[string]string
	if !podChooses(podAnn, a.families) {
		if nsAnn, err = a.namespaceAnnotations(ctx, ref); err != nil {
			return nil, err
		}
	}
	out := map[tables.Family]string{}
	txn := a.DB.ReadTxn()
	for _, f := range a.families {
		choice, err := choosePool(podAnn, nsAnn, f, a.defaultPool)
		if err != nil {
			a.podEvent(ref, corev1.EventTypeWarning, EventBadAnnotation, err.Error())
			return nil, cniError(http.StatusBadRequest, ipamv1.CodeBadAnnotation, "pod %s/%s: %v", ref.Namespace, ref.Name, err)
		}
		pool, _, ok := a.Pools.Get(txn, tables.PodIPPoolNameIndex.Query(choice.Pool))
		var why string
		switch {
		case !ok:
			why = fmt.Sprintf("CiliumPodIPPool %q (%s) does not exist", choice.Pool, choice.Why)
		case pool.Family(f) == nil:
			why = fmt.Sprintf("CiliumPodIPPool %q (%s) has no %s CIDRs", choice.Pool, choice.Why, f)
		}
		if why != "" {
			a.podEvent(ref, corev1.EventTypeWarning, EventUnknownPool, why)
			return nil, cniError(http.StatusBadRequest, ipamv1.CodeUnknownPool, "pod %s/%s: %s", ref.Namespace, ref.Name, why)
		}
		if pool.Deleting {
			// Its CIDRs drain so that the deletion can finish: a new pod
			// would hold it up.
			why = fmt.Sprintf("CiliumPodIPPool %q (%s) is being deleted", choice.Pool, choice.Why)
			a.podEvent(ref, corev1.EventTypeWarning, EventPoolDeleting, why)
			return nil, cniError(http.StatusConflict, ipamv1.CodePoolDeleting, "pod %s/%s: %s", ref.Namespace, ref.Name, why)
		}
		out[f] = choice.Pool
	}
	return out, nil
}

// podAnnotations finds the pod in the pods table, waiting a little for a
// pod the watch has not delivered yet, then asking the API server (the only
// API call an ADD can make, and only in that race).
func (a *agent) podAnnotations(ctx context.Context, ref ipamv1.PodRef) (map[string]string, error) {
	deadline := time.After(podWait)
	for {
		pod, _, watch, ok := a.Pods.GetWatch(a.DB.ReadTxn(), tables.PodKeyIndex.Query(ref.Namespace+"/"+ref.Name))
		if ok && (ref.UID == "" || pod.UID == ref.UID) {
			return pod.PoolAnnotations, nil
		}
		select {
		case <-ctx.Done():
			return nil, cniError(http.StatusServiceUnavailable, ipamv1.CodeTryAgainLater, "pod %s/%s: %v", ref.Namespace, ref.Name, ctx.Err())
		case <-watch:
			continue
		case <-deadline:
		}
		pod2, err := a.Kube.CoreV1().Pods(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, cniError(http.StatusBadRequest, ipamv1.CodeTryAgainLater, "pod %s/%s does not exist", ref.Namespace, ref.Name)
		case err != nil:
			return nil, cniError(http.StatusServiceUnavailable, ipamv1.CodeTryAgainLater, "pod %s/%s is not known to the agent yet and the API server cannot be asked: %v", ref.Namespace, ref.Name, err)
		}
		return tables.PodFromK8s(pod2).PoolAnnotations, nil
	}
}

// namespaceAnnotations returns the pool annotations of the pod's
// namespace, from the namespaces table, else from the API server (the
// watch may not have delivered a new namespace yet). A namespace that
// cannot be read fails the ADD, to be retried by the runtime, as in
// Cilium: its annotation may name the pod's pool, and the pool of a
// running pod never changes, so taking the default pool would be for
// good. That includes a namespace the API server says does not exist
// (Cilium's ResourceNotFound): the pod's namespace is being deleted, or
// the agent's view is behind.
func (a *agent) namespaceAnnotations(ctx context.Context, ref ipamv1.PodRef) (map[string]string, error) {
	if ns, _, ok := a.Namespaces.Get(a.DB.ReadTxn(), tables.NamespaceNameIndex.Query(ref.Namespace)); ok {
		return ns.PoolAnnotations, nil
	}
	ns, err := a.Kube.CoreV1().Namespaces().Get(ctx, ref.Namespace, metav1.GetOptions{})
	if err == nil {
		return tables.NamespaceFromK8s(ns).PoolAnnotations, nil
	}
	why := fmt.Sprintf("the API server cannot be asked: %v", err)
	if apierrors.IsNotFound(err) {
		why = "the API server says it does not exist"
	}
	msg := fmt.Sprintf("pod %s/%s: its Namespace %q is not known to the agent yet and %s; "+
		"its pool annotations (%s) may choose the pod's pool, so the ADD fails for the runtime to retry",
		ref.Namespace, ref.Name, ref.Namespace, why, tables.AnnotationIPPool)
	a.Log.Warn("Pod address request waits for its Namespace", "pod", ref.Namespace+"/"+ref.Name, "namespace", ref.Namespace, "error", err)
	return nil, cniError(http.StatusServiceUnavailable, ipamv1.CodeTryAgainLater, "%s", msg)
}

func (a *agent) podEvent(ref ipamv1.PodRef, typ, reason, msg string) {
	a.Events.Event(&corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ref.Namespace, Name: ref.Name, UID: types.UID(ref.UID)}, typ, reason, msg)
	a.Log.Warn("Pod address request failed", "pod", ref.Namespace+"/"+ref.Name, "reason", reason, "message", msg)
}
