package nodeipam

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	// its pod. The default of ipam-gc-grace.
	gcGrace = time.Minute
)

// gcIntervalFor looks at least twice per grace: an address whose
// allocation is a grace old is released at most two graces after its pod
// went (suspected within an interval, asked about a grace later, within
// another interval).
func gcIntervalFor(grace time.Duration) time.Duration {
	return min(gcInterval, grace/2)
}

// collectGarbage releases the addresses of pods that no longer exist. The
// runtime's DEL and CNI GC normally do it; this catches DELs that never
// came (a node whose runtime lost state, a plugin binary removed). Nothing
// is released on the table's word alone: the API server must confirm.
func (a *agent) collectGarbage(ctx context.Context) error {
	a.mu.Lock()
	restored := a.state != nil
	a.mu.Unlock()
	if !restored {
		return nil // the journal is not read yet: nothing is known to be anyone's
	}
	if err := a.replayPendingDels(); err != nil {
		return err
	}
	a.mu.Lock()
	entries := slices.Collect(a.state.all())
	a.mu.Unlock()
	txn := a.DB.ReadTxn()
	var inTable func(ipamv1.PodRef) (string, bool)
	if ok, _ := a.Pods.Initialized(txn); ok {
		inTable = func(ref ipamv1.PodRef) (string, bool) {
			pod, _, ok := a.Pods.Get(txn, tables.PodKeyIndex.Query(ref.Namespace+"/"+ref.Name))
			if !ok {
				return "", false
			}
			return pod.UID, true
		}
	}
	ask := func(ref ipamv1.PodRef) (*corev1.Pod, error) {
		return a.Kube.CoreV1().Pods(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	}
	for _, c := range a.gc.round(entries, inTable, ask, a.node, time.Now()) {
		a.mu.Lock()
		released, derr := a.state.del(c.att)
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

// gcTracker decides which addresses the garbage collector releases, apart
// from the locks and the I/O: an attachment is released only when its
// allocation is older than grace, its pod has looked gone from the pods
// table for at least grace (two looks, one grace apart: the watch can be
// behind), and the API server then confirms the pod is gone or is another
// pod now (another UID, or not on this node).
type gcTracker struct {
	grace time.Duration
	// suspects are attachments whose pod looked gone, and since when.
	suspects map[ipamv1.Attachment]time.Time
}

type gcCandidate struct {
	att ipamv1.Attachment
	pod ipamv1.PodRef
}

// round looks at every allocation once. inTable answers from the pods table
// (the pod's UID, or not there); nil while the table is not complete yet
// (after a start, before the first list): then nothing is judged, as every
// pod would look gone. ask asks the API server and is called only for
// attachments suspected for a grace already. It returns the attachments to
// release now, and forgets them.
func (g *gcTracker) round(entries []entry, inTable func(ipamv1.PodRef) (uid string, ok bool), ask func(ipamv1.PodRef) (*corev1.Pod, error), node string, now time.Time) []gcCandidate {
	if inTable == nil {
		return nil
	}
	if g.suspects == nil {
		g.suspects = map[ipamv1.Attachment]time.Time{}
	}
	present := map[ipamv1.Attachment]bool{}
	var check []gcCandidate
	for _, e := range entries {
		if present[e.Attachment] {
			continue // one look per attachment, whatever its families
		}
		present[e.Attachment] = true
		if now.Sub(e.Since) < g.grace {
			continue
		}
		if uid, ok := inTable(e.Pod); ok && (e.Pod.UID == "" || uid == e.Pod.UID) {
			delete(g.suspects, e.Attachment)
			continue
		}
		first, known := g.suspects[e.Attachment]
		if !known {
			g.suspects[e.Attachment] = now
			continue
		}
		if now.Sub(first) >= g.grace {
			check = append(check, gcCandidate{e.Attachment, e.Pod})
		}
	}
	// Released some other way (DEL, CNI GC) since: forget them.
	for att := range g.suspects {
		if !present[att] {
			delete(g.suspects, att)
		}
	}
	var release []gcCandidate
	for _, c := range check {
		pod, err := ask(c.pod)
		switch {
		case err == nil && (c.pod.UID == "" || string(pod.UID) == c.pod.UID) && pod.Spec.NodeName == node:
			delete(g.suspects, c.att) // the table was behind: suspect it afresh
		case err != nil && !apierrors.IsNotFound(err):
			// Ask again next round: an API server that cannot answer
			// proves nothing.
		default:
			delete(g.suspects, c.att)
			release = append(release, c)
		}
	}
	return release
}
