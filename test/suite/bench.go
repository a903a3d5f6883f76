package suite

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Say prints a line of a benchmark's report on stdout. The benchmarks
// print there rather than with b.Log: the testing package keeps only the
// first lines of a benchmark's log.
func Say(b *testing.B, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Printf("%s: %s\n", b.Name(), strings.ReplaceAll(strings.TrimRight(msg, "\n"), "\n", "\n    "))
}

// Percentile returns the nearest-rank percentile p (0 < p <= 100) of
// sorted: the smallest value with at least p% of the values at or below it.
// With fewer than 100 values, p99 is the maximum.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// EnvInt reads a benchmark's knob from the environment: a positive
// integer, def when unset.
func EnvInt(b testing.TB, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 1 {
		b.Fatalf("%s=%q: want a positive integer", key, v)
	}
	return i
}
