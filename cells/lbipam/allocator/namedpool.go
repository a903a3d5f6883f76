package allocator

import (
	"fmt"

	"github.com/heraldlb/herald/tables"
)

// A Service may name the pool its addresses must come from (MetalLB's
// address-pool annotation). The named pool's serviceSelector still applies,
// as MetalLB still applies an IPAddressPool's serviceAllocation to a Service
// that names it: naming a pool narrows the choice, it never widens it.

// offers reports whether the pool may give the Service addresses: it
// selects the Service, and it is the pool the Service names, if any.
func offers(p *poolState, row *tables.Service) bool {
	return named(p, row) && p.row.Selects(row)
}

// named reports whether the Service accepts the pool by name.
func named(p *poolState, row *tables.Service) bool {
	return row.Annotations.Pool == "" || row.Annotations.Pool == p.row.Name
}

// namedPoolProblem says why the pool a Service names can give it nothing:
// it does not exist, or its serviceSelector does not match. A Service in
// that state holds no address from any other pool.
func (e *Engine) namedPoolProblem(row *tables.Service) (reason, message string) {
	name, key := row.Annotations.Pool, row.Annotations.PoolAnnotation
	if name == "" {
		return "", ""
	}
	p := e.pools[name]
	switch {
	case p == nil:
		return tables.ReasonNoPool, fmt.Sprintf("IP Pool '%s' named by annotation %s does not exist", name, key)
	case !p.row.Selects(row):
		return tables.ReasonPoolSelectorMismatch, fmt.Sprintf("IP Pool '%s' named by annotation %s has a serviceSelector that does not match this service", name, key)
	}
	return "", ""
}

// notNamedMessage explains why a held or requested address outside the
// named pool is not given.
func notNamedMessage(row *tables.Service) string {
	return fmt.Sprintf("the service asks for IP Pool '%s' (annotation %s)", row.Annotations.Pool, row.Annotations.PoolAnnotation)
}
