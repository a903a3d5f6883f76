package allocator

import "fmt"

// detectConflicts marks every pool with a block that overlaps a block of an
// older pool, an earlier block of its own, or a CIDR of an older
// CiliumPodIPPool (podpools.go), as conflicting. Pools are
// compared oldest first (ties by name), so the pool created last is the one
// marked, and the outcome does not depend on the order events arrive in.
func (e *Engine) detectConflicts() {
	for i, p := range e.poolOrder {
		p.conflict = ""
	blocks:
		for bi, b := range p.row.Blocks {
			// Earlier blocks of the same pool first, then older pools.
			for bj := 0; bj < bi; bj++ {
				if o := p.row.Blocks[bj]; b.Overlaps(o) {
					p.conflict = conflictMessage(b.Describe(), o.Describe(), p.row.Name)
					break blocks
				}
			}
			for _, q := range e.poolOrder[:i] {
				for _, o := range q.row.Blocks {
					if b.Overlaps(o) {
						p.conflict = conflictMessage(b.Describe(), o.Describe(), q.row.Name)
						break blocks
					}
				}
			}
		}
		if p.conflict == "" {
			p.conflict = e.podPoolConflict(p)
		}
	}
}

// conflictMessage renders the PoolConflict message, e.g. "Pool conflicts
// since CIDR '20.0.10.0/24' overlaps CIDR '20.0.10.0/24' from IP Pool
// 'blue-pool'".
func conflictMessage(mine, theirs, pool string) string {
	return fmt.Sprintf("Pool conflicts since %s overlaps %s from IP Pool '%s'", mine, theirs, pool)
}
