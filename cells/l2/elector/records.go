package elector

import (
	"context"
	"errors"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/heraldlb/herald/tables"
)

// errConflict: the Lease changed since the decision was made; the write
// did not happen, the next round decides again from what it reads.
var errConflict = errors.New("the Lease changed since it was read")

// writeRecord writes the holder of a group into its announcement Lease,
// conditional on the version the decision was made from ("" to create
// it). It returns the new resourceVersion.
func writeRecord(ctx context.Context, leases coordinationclient.LeaseInterface, w write, duration time.Duration) (string, error) {
	now := metav1.NewMicroTime(time.Now())
	secs := int32(duration / time.Second)
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: w.group, ResourceVersion: w.fromVersion,
			Annotations: map[string]string{tables.L2TermAnnotation: w.term}},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now,
			LeaseTransitions: &w.transitions},
	}
	if !w.acquired.IsZero() {
		l.Spec.AcquireTime = &metav1.MicroTime{Time: w.acquired}
	}
	if w.holder != "" {
		l.Spec.HolderIdentity = &w.holder
	}
	return putLease(ctx, leases, l)
}

// handedTo returns the leaseTransitions and acquireTime of the Lease r
// once it names holder, so that both fields say what the spec says they
// do, as the Lease election (client-go's) writes them: the count goes up
// by one whenever another node takes the Lease (a release keeps it; a new
// Lease starts at 0), and the acquire time stays while the same node
// holds it, in a new term too (zero: the time of the write).
func (r holding) handedTo(holder string) (transitions int32, acquired time.Time) {
	switch {
	case r.version == "":
		return 0, time.Time{}
	case holder != "" && holder == r.holder:
		return r.transitions, r.acquired
	case holder == "":
		return r.transitions, time.Time{}
	}
	return r.transitions + 1, time.Time{}
}

// writeTakeover creates or grows a takeover record, conditional on the
// version read ("" to create it). The record holds no holder: it is not
// an announcement Lease.
func writeTakeover(ctx context.Context, leases coordinationclient.LeaseInterface, w *recordWrite, duration time.Duration) (string, error) {
	node, term, _ := strings.Cut(w.from, "/")
	now := metav1.NewMicroTime(time.Now())
	secs := int32(duration / time.Second)
	t := tables.L2Takeover{From: w.from, Owners: w.owners}
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: tables.L2TakeoverLeaseName(node, term), ResourceVersion: w.fromVersion,
			Annotations: map[string]string{tables.L2TakeoverAnnotation: t.Encode()}},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}
	return putLease(ctx, leases, l)
}

// putLease creates l when it carries no resourceVersion, and updates it
// conditional on that version otherwise. Losing the race (the version
// moved, the Lease appeared or went) is errConflict; it returns the
// version written.
func putLease(ctx context.Context, leases coordinationclient.LeaseInterface, l *coordinationv1.Lease) (string, error) {
	var out *coordinationv1.Lease
	var err error
	if l.ResourceVersion == "" {
		out, err = leases.Create(ctx, l, metav1.CreateOptions{})
	} else {
		out, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	switch {
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err):
		return "", errConflict
	case err != nil:
		return "", err
	}
	return out.ResourceVersion, nil
}

// deleteRecord deletes the Lease of a group that is gone, if it is still
// at version.
func deleteRecord(ctx context.Context, leases coordinationclient.LeaseInterface, name, version string) error {
	err := leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &version}})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return errConflict
	}
	return err
}
