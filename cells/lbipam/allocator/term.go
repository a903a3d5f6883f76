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
	tables.TermRunner{DB: p.DB, Leadership: p.Leadership, Lease: tables.LBIPAMLease, RetryAfter: retryTerm}.Run(ctx,
		func(ctx context.Context, term uint64) error {
			health.OK(fmt.Sprintf("leading, term %d", term))
			return allocate(ctx, p, term)
		},
		func(term uint64, err error, termOver bool) {
			clearDecisions(p)
			if err != nil && !termOver {
				p.Log.Error("LB IPAM could not start its term; retrying", "term", term, "error", err)
				health.Degraded(fmt.Sprintf("leading, term %d, not allocating", term), err)
				return
			}
			p.Log.Info("LB IPAM term ended, no longer allocating", "term", term)
			health.OK("following")
		})
	clearDecisions(p)
}

// clearDecisions empties lb-allocations and lb-pool-status: only a leader
// has decisions, and only for its current term.
func clearDecisions(p params) {
	wtxn := p.DB.WriteTxn(p.Allocations, p.PoolStatus)
	_ = p.Allocations.DeleteAll(wtxn)
	_ = p.PoolStatus.DeleteAll(wtxn)
	wtxn.Commit()
}
