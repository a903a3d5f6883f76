package readiness

import (
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		probes string // o: success, x: failure
		want   string // eligibility after each probe: E eligible, - not
	}{
		{"starts not eligible", "oo", "--"},
		{"eligible after three successes", "ooooo", "--EEE"},
		{"a failure resets the count", "ooxooo", "-----E"},
		{"two failures are not enough", "oooxxo", "--EEEE"},
		{"three failures end it", "oooxxxo", "--EEE--"},
		{"flapping stays out", "oooxxxoxoxoxox", "--EEE---------"},
		{"flapping owner keeps it", "oooxxoxxoxxo", "--EEEEEEEEEE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := judge{failureThreshold: 3, successThreshold: 3}
			var got strings.Builder
			for _, p := range tc.probes {
				j.observe(p == 'o')
				if j.eligible {
					got.WriteByte('E')
				} else {
					got.WriteByte('-')
				}
			}
			if got.String() != tc.want {
				t.Fatalf("probes %s: eligibility %s, want %s", tc.probes, got.String(), tc.want)
			}
		})
	}
}
