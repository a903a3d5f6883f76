package k8sreflect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/heraldlb/herald/cells/internal/reconnect"
)

// reflector mirrors one kind of Kubernetes object into a table through
// client-go's reflector. Events are batched: a burst of a thousand Service creations
// becomes a few write transactions, not a thousand.
type reflector[K runtime.Object, Obj any] struct {
	name      string
	db        *statedb.DB
	table     statedb.RWTable[Obj]
	lw        cache.ListerWatcher
	example   K // an empty object of the kind, for client-go's reflector
	transform func(K) Obj
	// equal, when set, tells an update that changes nothing in the row,
	// which is then not written (see Def.Equal).
	equal func(a, b Obj) bool
	log   *slog.Logger
	// gate holds calls that did not reach the API server (nil: none).
	gate *reconnect.Gate

	// versionOf returns a row's object key ("namespace/name" or "name")
	// and resourceVersion; reflectors that have it can catch up
	// (tables.Freshness).
	versionOf func(Obj) (key, resourceVersion string)
	// tombstones remember recent deletions: an object a catch-up listed may
	// be gone from the table because it was deleted after the list.
	tombstones tombstones[Obj]
	// listedKeys are the primary keys of the rows a list being written
	// holds so far (nil between lists); only the run loop touches it.
	listedKeys map[string]struct{}
}

type pendingEvent[K any] struct {
	obj     K
	deleted bool
	// relist marks the start of a list's objects, listed its end; fails
	// is the reflector's failure count when the list was stored.
	relist bool
	listed bool
	fails  uint64
}

// register adds the reflector's job. The table counts as initialized once
// the first list is in it.
func (r *reflector[K, Obj]) register(jg job.Group) {
	wtxn := r.db.WriteTxn(r.table)
	initDone := r.table.RegisterInitializer(wtxn, "k8s-"+r.name)
	wtxn.Commit()
	jg.Add(job.OneShot("reflect-"+r.name, func(ctx context.Context, health cell.Health) error {
		return r.run(ctx, health, initDone)
	}))
}

// run lists and watches, and writes what arrives into the table. Health
// says whether the table is in sync with the API server: Degraded from the
// first failed list or watch until a list made after the last failure is
// in the table (after an outage the reflector always lists again), so that
// readiness never claims a table the agent cannot trust yet.
func (r *reflector[K, Obj]) run(ctx context.Context, health cell.Health, initDone func(statedb.WriteTxn)) error {
	health.Degraded("not in sync yet: waiting for the first list of "+r.name, nil)
	lw := &reportingListWatch{ListerWatcher: r.lw, health: health, name: r.name, gate: r.gate}
	q := newEventQueue[K]()
	store := newQueueStore(q, lw.failures.Load)
	refl := cache.NewReflectorWithOptions(lw, r.example, store, cache.ReflectorOptions{Name: r.name, TypeDescription: r.name})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.listAndWatch(ctx, refl)
	}()
	defer func() { <-done }()

	initialized := false
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastWrite time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-q.wake:
		case <-tick.C:
		}
		if wait := untilNextWrite(time.Now(), lastWrite); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		batch := q.take()
		if len(batch) > 0 {
			lastWrite = time.Now()
		}
		listedAt, listed := r.write(batch)
		if !listed {
			continue
		}
		if !initialized {
			wtxn := r.db.WriteTxn(r.table)
			initDone(wtxn)
			wtxn.Commit()
			initialized = true
			r.log.Info("Initial sync done", "kind", r.name)
		}
		if listedAt == lw.failures.Load() {
			if lw.recovering.Swap(false) {
				r.log.Info("In sync with the API server again", "kind", r.name)
			}
			health.OK("in sync")
		}
	}
}

// burstWriteInterval is the least time between two of a reflector's write
// transactions. An event after a quiet spell is written at once; during a
// burst (a thousand Services created by a script) the events of up to this
// long share one transaction. Each transaction copies the table's changed
// tree nodes and wakes every reader of the table, so one per event costs
// the agent more than the events themselves; a reader waits at most this
// long more. Cilium's reflector batches likewise (up to 64 objects or 50 ms).
const burstWriteInterval = 10 * time.Millisecond

// untilNextWrite says how long to wait before writing what is queued now,
// given the time of the last write (zero: none yet).
func untilNextWrite(now, lastWrite time.Time) time.Duration {
	if lastWrite.IsZero() {
		return 0
	}
	return max(0, burstWriteInterval-now.Sub(lastWrite))
}

// listAndWatch runs client-go's reflector until ctx ends. A call that did
// not reach the API server never gets here: the gate holds it until the API
// server is ready (reportingListWatch), and then the reflector lists again
// at once. Everything else is retried as client-go's informers do (0.8 s
// doubling to 30 s, jittered, reset after two quiet minutes).
func (r *reflector[K, Obj]) listAndWatch(ctx context.Context, refl *cache.Reflector) {
	backoff := wait.NewExponentialBackoffManager(800*time.Millisecond, 30*time.Second, 2*time.Minute, 2.0, 1.0, clock.RealClock{})
	for ctx.Err() == nil {
		err := refl.ListAndWatchWithContext(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errBackAgain) {
			continue // the gate already spread this agent's reflectors
		}
		if err != nil {
			r.log.Warn("List or watch failed, retrying", "kind", r.name, "error", err)
		}
		t := backoff.Backoff()
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// write applies a batch of events in one transaction. It returns the
// failure count of the last list the batch completed, if any.
func (r *reflector[K, Obj]) write(batch []pendingEvent[K]) (listedAt uint64, listed bool) {
	if len(batch) == 0 {
		return 0, false
	}
	wtxn := r.db.WriteTxn(r.table)
	for _, ev := range batch {
		switch {
		case ev.relist:
			r.listedKeys = map[string]struct{}{}
		case ev.listed:
			r.deleteUnlisted(wtxn)
			listedAt, listed = ev.fails, true
		case ev.deleted:
			obj := r.transform(ev.obj)
			_, _, _ = r.table.Delete(wtxn, obj)
			r.tombstones.add(r.versionOf, obj, false)
		default:
			obj := r.transform(ev.obj)
			if !r.unchanged(wtxn, obj) {
				_, _, _ = r.table.Insert(wtxn, obj)
			}
			if r.listedKeys != nil {
				r.listedKeys[string(r.table.PrimaryIndexer().ObjectToKey(obj))] = struct{}{}
			}
		}
	}
	wtxn.Commit()
	return listedAt, listed
}

// unchanged reports whether the table already holds obj as it is (only
// for kinds that define Equal).
func (r *reflector[K, Obj]) unchanged(txn statedb.ReadTxn, obj Obj) bool {
	if r.equal == nil {
		return false
	}
	old, _, found := r.table.Get(txn, r.table.PrimaryIndexer().QueryFromObject(obj))
	return found && r.equal(old, obj)
}

// deleteUnlisted ends a list: the objects whose rows it did not write were
// deleted while no watch ran. The table is the reflector's only copy of
// them (it is the only writer of its table): their rows, the last state
// seen, are what is deleted.
func (r *reflector[K, Obj]) deleteUnlisted(wtxn statedb.WriteTxn) {
	var gone []Obj
	for obj := range r.table.All(wtxn) {
		if _, ok := r.listedKeys[string(r.table.PrimaryIndexer().ObjectToKey(obj))]; !ok {
			gone = append(gone, obj)
		}
	}
	for _, obj := range gone {
		_, _, _ = r.table.Delete(wtxn, obj)
		r.tombstones.add(r.versionOf, obj, true)
	}
	r.listedKeys = nil
}

// eventQueue collects the reflector's changes until the run loop writes
// them: the reflector must not wait for a write transaction.
type eventQueue[K any] struct {
	mu      sync.Mutex
	pending []pendingEvent[K]
	wake    chan struct{}
}

func newEventQueue[K any]() *eventQueue[K] {
	return &eventQueue[K]{wake: make(chan struct{}, 1)}
}

func (q *eventQueue[K]) push(k K, deleted bool) {
	q.add(pendingEvent[K]{obj: k, deleted: deleted})
}

// add queues evs at once: the run loop takes a list whole.
func (q *eventQueue[K]) add(evs ...pendingEvent[K]) {
	q.mu.Lock()
	q.pending = append(q.pending, evs...)
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

// errBackAgain ends a watch that failed because the API server was
// unreachable, once the gate says it is ready again: the reflector then
// lists afresh rather than resuming, so that the table is known to be in
// sync once that list is in it. It wraps nothing: client-go must not take
// it for "connection refused", which it would retry with its own backoff.
var errBackAgain = errors.New("the API server is ready again after it was unreachable: listing again")

// reportingListWatch reports each failed list and watch call to the
// reflector's health, and holds the calls that did not reach the API
// server at the agent's gate.
type reportingListWatch struct {
	cache.ListerWatcher
	health cell.Health
	name   string
	gate   *reconnect.Gate
	// failures counts failed calls: a list stored after the last failure
	// puts the table back in sync.
	failures atomic.Uint64
	// recovering: a failure was reported and no list since has synced.
	recovering atomic.Bool
}

func (l *reportingListWatch) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	for {
		obj, err := cache.ToListerWithContext(l.ListerWatcher).ListWithContext(ctx, o)
		if !l.failed("list", err) {
			return obj, err
		}
		if l.gate == nil || !reconnect.Unreachable(err) {
			return obj, err
		}
		if l.gate.Wait(ctx) != nil {
			return obj, err
		}
	}
}

func (l *reportingListWatch) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := cache.ToWatcherWithContext(l.ListerWatcher).WatchWithContext(ctx, o)
	if !l.failed("watch", err) || l.gate == nil || !reconnect.Unreachable(err) {
		return w, err
	}
	if werr := l.gate.Wait(ctx); werr != nil {
		return nil, werr
	}
	return nil, errBackAgain
}

// failed reports err, if any, and tells the gate when a call got through.
func (l *reportingListWatch) failed(call string, err error) bool {
	if err == nil {
		if l.gate != nil {
			l.gate.Reached()
		}
		return false
	}
	l.failures.Add(1)
	l.recovering.Store(true)
	l.health.Degraded(call+" "+l.name, err)
	return true
}
