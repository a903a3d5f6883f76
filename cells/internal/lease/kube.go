package lease

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"
)

// Kube is one coordination.k8s.io/v1 Lease, in client-go's
// leaderelection record format.
type Kube struct {
	client coordinationclient.LeaseInterface
	name   string
	// owners, if set, gives the owner references of the Lease when it is
	// created (NodeOwner).
	owners func(context.Context) ([]metav1.OwnerReference, error)
}

// NewKube is the Lease name in the namespace client works in.
func NewKube(client coordinationclient.LeaseInterface, name string) *Kube {
	return &Kube{client: client, name: name}
}

// OwnedBy makes the Lease, when this creates it, owned by what owners
// returns at that moment.
func (k *Kube) OwnedBy(owners func(context.Context) ([]metav1.OwnerReference, error)) *Kube {
	k.owners = owners
	return k
}

func (k *Kube) Get(ctx context.Context) (*Record, error) {
	l, err := k.client.Get(ctx, k.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return fromLease(l), nil
}

func (k *Kube) Create(ctx context.Context, r Record) (*Record, error) {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: k.name}}
	if k.owners != nil {
		refs, err := k.owners(ctx)
		if err != nil {
			return nil, err
		}
		l.OwnerReferences = refs
	}
	setSpec(l, r)
	got, err := k.client.Create(ctx, l, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	if err != nil {
		return nil, err
	}
	return fromLease(got), nil
}

func (k *Kube) Update(ctx context.Context, r Record) (*Record, error) {
	base, ok := r.obj.(*coordinationv1.Lease)
	if !ok {
		return nil, fmt.Errorf("lease %s: update of a record that was never read", k.name)
	}
	l := base.DeepCopy()
	l.ResourceVersion = r.version
	setSpec(l, r)
	got, err := k.client.Update(ctx, l, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	if err != nil {
		return nil, err
	}
	return fromLease(got), nil
}

// Watch reports every version of the Lease to seen, with the time it was
// seen, until ctx ends. A (re)started watch first reads the Lease, then
// watches from that version. Followers learn of renewals this way without
// polling; if the watch keeps failing they still take over, just later
// (each takeover attempt reads the Lease again). Between two watches it
// calls pause with the error that ended the last one (nil: the API server
// closed it).
func (k *Kube) Watch(ctx context.Context, pause func(context.Context, error), seen func(*Record, time.Time), failed func(error)) {
	for ctx.Err() == nil {
		err := k.watchOnce(ctx, seen)
		if err != nil && ctx.Err() == nil {
			failed(err)
		}
		pause(ctx, err)
	}
}

func (k *Kube) watchOnce(ctx context.Context, seen func(*Record, time.Time)) error {
	l, err := k.client.Get(ctx, k.name, metav1.GetOptions{})
	var rv string
	switch {
	case apierrors.IsNotFound(err):
		seen(nil, time.Now())
		list, err := k.client.List(ctx, metav1.ListOptions{FieldSelector: k.selector(), Limit: 1})
		if err != nil {
			return err
		}
		rv = list.ResourceVersion
	case err != nil:
		return err
	default:
		seen(fromLease(l), time.Now())
		rv = l.ResourceVersion
	}
	w, err := k.client.Watch(ctx, metav1.ListOptions{FieldSelector: k.selector(), ResourceVersion: rv})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil // closed by the server (timeout): start again
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if l, ok := ev.Object.(*coordinationv1.Lease); ok {
					seen(fromLease(l), time.Now())
				}
			case watch.Deleted:
				seen(nil, time.Now())
			case watch.Error:
				return apierrors.FromObject(ev.Object)
			}
		}
	}
}

func (k *Kube) selector() string {
	return fields.OneTermEqualSelector("metadata.name", k.name).String()
}

func fromLease(l *coordinationv1.Lease) *Record {
	r := &Record{version: l.ResourceVersion, obj: l}
	s := l.Spec
	if s.HolderIdentity != nil {
		r.Holder = *s.HolderIdentity
	}
	if s.LeaseDurationSeconds != nil {
		r.Duration = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	if s.LeaseTransitions != nil {
		r.Transitions = *s.LeaseTransitions
	}
	if s.AcquireTime != nil {
		r.AcquireTime = s.AcquireTime.Time
	}
	if s.RenewTime != nil {
		r.RenewTime = s.RenewTime.Time
	}
	return r
}

func setSpec(l *coordinationv1.Lease, r Record) {
	l.Spec.HolderIdentity = ptr.To(r.Holder)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(r.Duration / time.Second))
	l.Spec.LeaseTransitions = ptr.To(r.Transitions)
	l.Spec.AcquireTime = ptr.To(metav1.NewMicroTime(r.AcquireTime))
	l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(r.RenewTime))
}
