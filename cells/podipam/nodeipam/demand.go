package nodeipam

// needed is how many addresses of a pool the node asks for: the spec's
// neededIPs = roundUp(inUse + pending + pre, pre). A pool without a
// pre-allocation entry asks for exactly inUse + pending.
func needed(inUse, pending, pre int) int {
	n := inUse + pending
	if pre <= 0 {
		return n
	}
	n += pre
	return (n + pre - 1) / pre * pre
}
