package k8swatch

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"k8s.io/apimachinery/pkg/runtime"
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
}

type pendingEvent[K any] struct {
	obj     K
	deleted bool
}

// register adds the reflector's job. The table counts as initialized once
// the informer's initial list is in it.
func (r *reflector[K, Obj]) register(jg job.Group) {
	wtxn := r.db.WriteTxn(r.table)
	initDone := r.table.RegisterInitializer(wtxn, "k8s-"+r.name)
	wtxn.Commit()

	jg.Add(job.OneShot("reflect-"+r.name, func(ctx context.Context, health cell.Health) error {
		inf := cache.NewSharedIndexInformer(r.lw, r.example, 0, cache.Indexers{})
		_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
			r.log.Warn("Watch failed, retrying", "kind", r.name, "error", err)
			health.Degraded("watch "+r.name, err)
		})

		var (
			mu      sync.Mutex
			pending []pendingEvent[K]
			wake    = make(chan struct{}, 1)
		)
		push := func(o any, deleted bool) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			k, ok := o.(K)
			if !ok {
				return
			}
			mu.Lock()
			pending = append(pending, pendingEvent[K]{k, deleted})
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { push(o, false) },
			UpdateFunc: func(_, o any) { push(o, false) },
			DeleteFunc: func(o any) { push(o, true) },
		})
		if err != nil {
			return fmt.Errorf("%s informer: %w", r.name, err)
		}
		go inf.Run(ctx.Done())

		flush := func() {
			mu.Lock()
			batch := pending
			pending = nil
			mu.Unlock()
			if len(batch) == 0 {
				return
			}
			wtxn := r.db.WriteTxn(r.table)
			for _, ev := range batch {
				obj := r.transform(ev.obj)
				if ev.deleted {
					_, _, _ = r.table.Delete(wtxn, obj)
				} else {
					_, _, _ = r.table.Insert(wtxn, obj)
				}
			}
			wtxn.Commit()
		}

		synced := false
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-wake:
			case <-tick.C:
			}
			flush()
			if !synced && reg.HasSynced() {
				// Everything the initial list delivered was pushed before
				// HasSynced turned true; flush it, then mark initialized.
				flush()
				wtxn := r.db.WriteTxn(r.table)
				initDone(wtxn)
				wtxn.Commit()
				synced = true
				health.OK("synced")
				r.log.Info("Initial sync done", "kind", r.name)
			}
		}
	}))
}
