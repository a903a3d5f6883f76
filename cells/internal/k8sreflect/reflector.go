package k8sreflect

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// reflector mirrors one kind of Kubernetes object into a table through an
// informer. Events are batched: a burst of a thousand Service creations
// becomes a few write transactions, not a thousand.
type reflector[K runtime.Object, Obj any] struct {
	name      string
	db        *statedb.DB
	table     statedb.RWTable[Obj]
	lw        cache.ListerWatcher
	example   K // an empty object of the kind, for the informer
	transform func(K) Obj
	log       *slog.Logger

	// versionOf returns a row's object key ("namespace/name" or "name")
	// and resourceVersion; reflectors that have it can catch up
	// (tables.Freshness).
	versionOf func(Obj) (key, resourceVersion string)
	// tombstones remember recent deletions: an object a catch-up listed may
	// be gone from the table because it was deleted after the list.
	tombstones tombstones[Obj]
}

type pendingEvent[K any] struct {
	obj     K
	deleted bool
	// unknownFinal: a deletion noticed by a relist, not by a watch event;
	// obj is then the last version seen, not the deleted one.
	unknownFinal bool
}

// register adds the reflector's job. The table counts as initialized once
// the informer's initial list is in it.
func (r *reflector[K, Obj]) register(jg job.Group) {
	wtxn := r.db.WriteTxn(r.table)
	initDone := r.table.RegisterInitializer(wtxn, "k8s-"+r.name)
	wtxn.Commit()
	jg.Add(job.OneShot("reflect-"+r.name, func(ctx context.Context, health cell.Health) error {
		return r.run(ctx, health, initDone)
	}))
}

func (r *reflector[K, Obj]) run(ctx context.Context, health cell.Health, initDone func(statedb.WriteTxn)) error {
	// Health follows the connection: Degraded while lists or watches
	// fail, OK again as soon as one succeeds, so that readiness reflects
	// the present after an API-server outage.
	inf := cache.NewSharedIndexInformer(&reportingListWatch{ListerWatcher: r.lw, health: health, name: r.name}, r.example, 0, cache.Indexers{})
	_ = inf.SetTransform(stripUnused)
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		r.log.Warn("Watch failed, retrying", "kind", r.name, "error", err)
		health.Degraded("watch "+r.name, err)
	})
	q := newEventQueue[K]()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { q.push(o, false) },
		UpdateFunc: func(_, o any) { q.push(o, false) },
		DeleteFunc: func(o any) { q.push(o, true) },
	})
	if err != nil {
		return fmt.Errorf("%s informer: %w", r.name, err)
	}
	go inf.Run(ctx.Done())

	synced := false
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-q.wake:
		case <-tick.C:
		}
		r.write(q.take())
		if !synced && reg.HasSynced() {
			// Everything the initial list delivered was pushed before
			// HasSynced turned true; write it, then mark initialized.
			r.write(q.take())
			wtxn := r.db.WriteTxn(r.table)
			initDone(wtxn)
			wtxn.Commit()
			synced = true
			health.OK("watching")
			r.log.Info("Initial sync done", "kind", r.name)
		}
	}
}

// write applies a batch of events in one transaction.
func (r *reflector[K, Obj]) write(batch []pendingEvent[K]) {
	if len(batch) == 0 {
		return
	}
	wtxn := r.db.WriteTxn(r.table)
	for _, ev := range batch {
		obj := r.transform(ev.obj)
		if ev.deleted {
			_, _, _ = r.table.Delete(wtxn, obj)
			r.tombstones.add(r.versionOf, obj, ev.unknownFinal)
		} else {
			_, _, _ = r.table.Insert(wtxn, obj)
		}
	}
	wtxn.Commit()
}

// eventQueue collects the informer's events until the reflector writes
// them: the informer's handler must not wait for a write transaction.
type eventQueue[K any] struct {
	mu      sync.Mutex
	pending []pendingEvent[K]
	wake    chan struct{}
}

func newEventQueue[K any]() *eventQueue[K] {
	return &eventQueue[K]{wake: make(chan struct{}, 1)}
}

func (q *eventQueue[K]) push(o any, deleted bool) {
	unknownFinal := false
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o, unknownFinal = d.Obj, true
	}
	k, ok := o.(K)
	if !ok {
		return
	}
	q.mu.Lock()
	q.pending = append(q.pending, pendingEvent[K]{k, deleted, unknownFinal})
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *eventQueue[K]) take() []pendingEvent[K] {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.pending
	q.pending = nil
	return batch
}

// catchUp waits until the table holds at least what a fresh list of the
// API server holds (tables.Freshness).
func (r *reflector[K, Obj]) catchUp(ctx context.Context) error {
	start := time.Now()
	listed, listRV, err := listVersions(ctx, cache.ToListerWithContext(r.lw).ListWithContext)
	if err != nil {
		return fmt.Errorf("listing %s: %w", r.name, err)
	}
	lastLog := time.Now()
	for {
		rows := map[string]string{}
		objs, changed := r.table.AllWatch(r.db.ReadTxn())
		for obj := range objs {
			key, rv := r.versionOf(obj)
			rows[key] = rv
		}
		n, example := behind(rows, listed, listRV, r.tombstones.deletedSince(start))
		if n == 0 {
			return nil
		}
		if time.Since(lastLog) >= progressEvery {
			logProgress(r.log, r.name, n, example, start)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-time.After(progressEvery):
		}
	}
}

// reportingListWatch reports each list and watch call to the reflector's
// health. The informer's own error handler sees only watch errors, and
// nothing at all when a watch is re-established.
type reportingListWatch struct {
	cache.ListerWatcher
	health cell.Health
	name   string
}

func (l *reportingListWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := cache.ToListerWithContext(l.ListerWatcher).ListWithContext(ctx, o)
	l.report("list", err)
	return obj, err
}

func (l *reportingListWatch) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := cache.ToWatcherWithContext(l.ListerWatcher).WatchWithContext(ctx, o)
	l.report("watch", err)
	return w, err
}

func (l *reportingListWatch) report(call string, err error) {
	if err != nil {
		l.health.Degraded(call+" "+l.name, err)
		return
	}
	l.health.OK("watching")
}

// lastApplied is kubectl's copy of the object as last applied, often the
// largest annotation on an object.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// stripUnused drops, before the informer stores an object, what no row is
// made of: the field sets of server-side apply's managed fields (every
// writer's list of fields, larger than a Service's spec; who manages what,
// which rows do read, stays) and kubectl's last-applied annotation. The
// informer keeps a copy of every object for as long as it exists; with 2000
// Services the field sets were a fifth of the agent's heap.
func stripUnused(o any) (any, error) {
	if m, err := meta.Accessor(o); err == nil {
		mfs := m.GetManagedFields()
		for i := range mfs {
			mfs[i].FieldsV1 = nil
		}
		if a := m.GetAnnotations(); a[lastApplied] != "" {
			delete(a, lastApplied)
		}
	}
	return o, nil
}
