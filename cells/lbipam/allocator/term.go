package allocator

import (
	"context"
	"time"

	"github.com/cilium/hive/cell"

	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
)

// retryTerm paces new attempts when a term's allocator fails to start (the
// API server cannot be listed, say) while the term goes on.
const retryTerm = time.Second

// runTerms allocates during each term this agent leads the LB IPAM Lease.
// Nothing survives from one term to the next: the engine is rebuilt, and
// the decisions of an ended term are deleted so that nothing writes them.
func runTerms(ctx context.Context, p params, health cell.Health) {
	leader.Job{DB: p.DB, Leadership: p.Leadership, Lease: tables.LBIPAMLease, Name: "LB IPAM", RetryAfter: retryTerm,
		Run:   func(ctx context.Context, term uint64, working func()) error { return allocate(ctx, p, term, working) },
		Clear: func() { clearDecisions(p) },
	}.Follow(ctx, health, p.Log)
}

// clearDecisions empties lb-allocations and lb-pool-status: only a leader
// has decisions, and only for its current term.
func clearDecisions(p params) {
	wtxn := p.DB.WriteTxn(p.Allocations, p.PoolStatus)
	_ = p.Allocations.DeleteAll(wtxn)
	_ = p.PoolStatus.DeleteAll(wtxn)
	wtxn.Commit()
}
