package tables

import "testing"

func TestCountFloat(t *testing.T) {
	for in, want := range map[string]float64{
		"0":                    0,
		"256":                  256,
		"18446744073709551616": 18446744073709551616, // 2^64, a /64 of /128s
		"":                     0,
		"many":                 0,
	} {
		if got := CountFloat(in); got != want {
			t.Errorf("CountFloat(%q) = %v, want %v", in, got, want)
		}
	}
}
