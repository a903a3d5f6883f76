// Package leader runs the work of a cluster-wide singleton (LB IPAM, the
// pod CIDR allocator) once per term of its Lease, and fences the writes
// decided in a term. The election itself is the election cell's; this
// package only reads the leadership table it writes.
package leader

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// Job is a leader-only job: Run once per term this agent leads Lease.
type Job struct {
	DB         *statedb.DB
	Leadership statedb.Table[*tables.Leadership]
	Lease      string
	// Name names the job in the log ("LB IPAM").
	Name string
	// RetryAfter paces new attempts when Run fails while its term goes on.
	RetryAfter time.Duration
	// Run does the work of one term, with a context that ends with it. It
	// calls working once the term's work runs (caught up with the API
	// server, decisions restored): until then health says Degraded, so
	// that readiness never claims a leader that cannot act yet.
	Run func(ctx context.Context, term uint64, working func()) error
	// Clear drops what a term decided, after each term and at the end:
	// nothing survives from one term to the next.
	Clear func()
}

// Follow runs the job for every term this agent leads until ctx ends,
// reporting on health and in the log.
func (j Job) Follow(ctx context.Context, health cell.Health, log *slog.Logger) {
	health.OK("following")
	j.terms(ctx,
		func(ctx context.Context, term uint64) error {
			health.Degraded(fmt.Sprintf("leading, term %d, catching up with the API server", term), nil)
			return j.Run(ctx, term, func() { health.OK(fmt.Sprintf("leading, term %d", term)) })
		},
		func(term uint64, err error, termOver bool) {
			j.Clear()
			if err != nil && !termOver {
				log.Error(j.Name+" could not start its term; retrying", "term", term, "error", err)
				health.Degraded(fmt.Sprintf("leading, term %d, not allocating", term), err)
				return
			}
			log.Info(j.Name+" term ended, no longer allocating", "term", term)
			health.OK("following")
		})
	j.Clear()
}

// terms calls run for every term this agent leads, with a context that
// ends with the term, until ctx ends. ended is called after each run with
// the term, run's error, and whether the term was over by then (false: run
// failed on its own, and is tried again in the same term after
// RetryAfter).
func (j Job) terms(ctx context.Context, run func(ctx context.Context, term uint64) error, ended func(term uint64, err error, termOver bool)) {
	for {
		term, ok := j.waitForTerm(ctx)
		if !ok {
			return
		}
		termCtx, end := context.WithCancel(ctx)
		go func() {
			defer end()
			j.waitTermEnd(termCtx, term)
		}()
		err := run(termCtx, term)
		termOver := termCtx.Err() != nil
		end()
		if ctx.Err() != nil {
			return
		}
		ended(term, err, termOver)
		if !termOver {
			select {
			case <-ctx.Done():
				return
			case <-time.After(j.RetryAfter):
			}
		}
	}
}

func (j Job) waitForTerm(ctx context.Context) (uint64, bool) {
	for {
		term, ok, watch := tables.LeadingTerm(j.DB.ReadTxn(), j.Leadership, j.Lease)
		if ok {
			return term, true
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-watch:
		}
	}
}

func (j Job) waitTermEnd(ctx context.Context, term uint64) {
	for {
		t, ok, watch := tables.LeadingTerm(j.DB.ReadTxn(), j.Leadership, j.Lease)
		if !ok || t != term {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-watch:
		}
	}
}

// catchUpTimeout bounds one attempt to catch up with the API server at the
// start of a term: a catch-up that cannot finish (a watch that never
// recovers) fails the term's start, which is retried from a fresh list,
// with an error in the log and health.
const catchUpTimeout = time.Minute

// CatchUp waits, at the start of a term, until the tables hold at least
// what the API server holds (tables.Freshness): a new leader decides from
// everything its predecessor may have written.
func CatchUp(ctx context.Context, f tables.Freshness, names ...string) error {
	ctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	if err := f.CatchUp(ctx, names...); err != nil {
		return fmt.Errorf("catching up with the API server: %w", err)
	}
	return nil
}
