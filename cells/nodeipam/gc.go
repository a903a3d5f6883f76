package nodeipam

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

const (
	// gcInterval is how often addresses of vanished pods are looked for.
	gcInterval = 30 * time.Second
	// gcGrace is how long an address must look orphaned (its pod missing
	// from the pods table, or replaced by another of the same name) before
	// the API server is asked; an ADD can come before the watch delivers
	// its pod.
	gcGrace = time.Minute
)

// collectGarbage releases the addresses of pods that no longer exist. The
// runtime's DEL and CNI GC normally do it; this catches DELs that never
// came (a node whose runtime lost state, a plugin binary removed). Nothing
// is released on the table's word alone: the API server must confirm.
func (a *agent) collectGarbage(ctx context.Context) error {
	if err := a.replayPendingDels(); err != nil {
		return err
	}
	if a.suspects == nil {
		a.suspects = map[ipamv1.Attachment]time.Time{}
	}
	now := time.Now()
	txn := a.DB.ReadTxn()
	if ok, _ := a.Pods.Initialized(txn); !ok {
		return nil
	}
	a.mu.Lock()
	type candidate struct {
		att ipamv1.Attachment
		pod ipamv1.PodRef
	}
	var check []candidate
	seen := map[ipamv1.Attachment]bool{}
	// Orphans too: a pod can be gone while its address lies outside the
	// node's CIDRs (the CIDR was taken away by hand).
	for e := range a.state.all() {
		if seen[e.Attachment] || now.Sub(e.Since) < gcGrace {
			continue
		}
		seen[e.Attachment] = true
		pod, _, ok := a.Pods.Get(txn, tables.PodKeyIndex.Query(e.Pod.Namespace+"/"+e.Pod.Name))
		if ok && (e.Pod.UID == "" || pod.UID == e.Pod.UID) {
			delete(a.suspects, e.Attachment)
			continue
		}
		first, known := a.suspects[e.Attachment]
		if !known {
			a.suspects[e.Attachment] = now
			continue
		}
		if now.Sub(first) >= gcGrace {
			check = append(check, candidate{e.Attachment, e.Pod})
		}
	}
	a.mu.Unlock()

	for _, c := range check {
		pod, err := a.Kube.CoreV1().Pods(c.pod.Namespace).Get(ctx, c.pod.Name, metav1.GetOptions{})
		switch {
		case err == nil && (c.pod.UID == "" || string(pod.UID) == c.pod.UID) && pod.Spec.NodeName == a.node:
			delete(a.suspects, c.att) // the table was behind
			continue
		case err != nil && !apierrors.IsNotFound(err):
			continue // ask again next time
		}
		a.mu.Lock()
		released, derr := a.state.del(c.att)
		delete(a.suspects, c.att)
		a.publishLocked(nil, released)
		a.mu.Unlock()
		a.dropGateways()
		for _, e := range released {
			a.Log.Info("Released the address of a pod that is gone", "ip", e.IP, "pod", c.pod.Namespace+"/"+c.pod.Name, "uid", c.pod.UID, "container", c.att.ContainerID)
		}
		if derr != nil {
			return derr
		}
		a.poke()
	}
	return nil
}
