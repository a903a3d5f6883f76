package allocator

import (
	"math/big"

	"github.com/heraldlb/herald/tables"
)

// poolStatus computes the status a pool should show.
func (p *poolState) computeStatus() *tables.LBPoolStatus {
	total, avail := new(big.Int), new(big.Int)
	var used uint64
	for _, r := range p.ranges {
		total.Add(total, r.Total())
		avail.Add(avail, r.Available())
		used += r.Used()
	}
	return &tables.LBPoolStatus{
		Name:               p.row.Name,
		ObservedGeneration: p.row.Generation,
		Conflicting:        p.conflict != "",
		ConflictMessage:    p.conflict,
		Total:              total.String(),
		Available:          avail.String(),
		Used:               new(big.Int).SetUint64(used).String(),
		SelectorError:      p.row.SelectorError,
		BlockErrors:        p.row.BlockErrors,
		ChoiceError:        p.row.Choice.Error,
	}
}
