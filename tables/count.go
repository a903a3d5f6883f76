package tables

import "math/big"

// CountFloat reads a count that tables hold as a decimal string because it
// can exceed int64 (addresses of an IPv6 pool, /120s in a /48) as a float
// for metrics: exact up to 2^53, rounded beyond. A malformed count is 0.
func CountFloat(decimal string) float64 {
	f, _, err := big.ParseFloat(decimal, 10, 64, big.ToNearestEven)
	if err != nil {
		return 0
	}
	v, _ := f.Float64()
	return v
}
