package allocator

import (
	"math/big"

	"github.com/heraldlb/herald/tables"
)

// poolStatus computes the status a pool should show. Available counts
// what the pool could still hand out: an address another pool backs in an
// overlapping block is not available here either, though only that pool
// counts it as used (poolcounts.go).
func (p *poolState) computeStatus() *tables.LBPoolStatus {
	total, avail := new(big.Int), new(big.Int)
	for _, r := range p.ranges {
		total.Add(total, r.Total())
		avail.Add(avail, r.Available())
	}
	return &tables.LBPoolStatus{
		Name:               p.row.Name,
		ObservedGeneration: p.row.Generation,
		Conflicting:        p.conflict != "",
		ConflictMessage:    p.conflict,
		Total:              total.String(),
		Available:          avail.String(),
		Used:               new(big.Int).SetUint64(p.used).String(),
		SelectorError:      p.row.SelectorError,
		BlockErrors:        p.row.BlockErrors,
		ChoiceError:        p.row.Choice.Error,
	}
}
