package allocator

import (
	"context"
	"fmt"
	"time"

	"github.com/cilium/hive/cell"

	"github.com/heraldlb/herald/tables"
)

// retryTerm paces new attempts when a term's allocator fails to start (the
// API server cannot be listed, say) while the term goes on.
const retryTerm = time.Second

// runTerms allocates during each term this agent leads the LB IPAM Lease.
// Nothing survives from one term to the next: the engine is rebuilt, and
// the decisions of an ended term are deleted so that nothing writes them.
func runTerms(ctx context.Context, p params, health cell.Health) {
	health.OK("following")
	for {
		term, ok := waitForTerm(ctx, p)
		if !ok {
			return
		}
		health.OK(fmt.Sprintf("leading, term %d", term))
		termCtx, end := context.WithCancel(ctx)
		go func() {
			defer end()
			waitTermEnd(termCtx, p, term)
		}()
		err := allocate(termCtx, p, term)
		termEnded := termCtx.Err() != nil
		end()
		clearDecisions(p)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !termEnded:
			p.Log.Error("LB IPAM could not start its term; retrying", "term", term, "error", err)
			health.Degraded(fmt.Sprintf("leading, term %d, not allocating", term), err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryTerm):
			}
		default:
			p.Log.Info("LB IPAM term ended, no longer allocating", "term", term)
			health.OK("following")
		}
	}
}

// leading returns this agent's term if it leads the LB IPAM Lease.
func leading(p params) (term uint64, ok bool, watch <-chan struct{}) {
	l, _, watch, found := p.Leadership.GetWatch(p.DB.ReadTxn(), tables.LeadershipLeaseIndex.Query(tables.LBIPAMLease))
	if !found || !l.Leading {
		return 0, false, watch
	}
	return l.Term, true, watch
}

func waitForTerm(ctx context.Context, p params) (uint64, bool) {
	for {
		term, ok, watch := leading(p)
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

func waitTermEnd(ctx context.Context, p params, term uint64) {
	for {
		t, ok, watch := leading(p)
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

// clearDecisions empties lb-allocations and lb-pool-status: only a leader
// has decisions, and only for its current term.
func clearDecisions(p params) {
	wtxn := p.DB.WriteTxn(p.Allocations, p.PoolStatus)
	_ = p.Allocations.DeleteAll(wtxn)
	_ = p.PoolStatus.DeleteAll(wtxn)
	wtxn.Commit()
}
