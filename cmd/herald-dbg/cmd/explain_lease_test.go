package cmd

import "testing"

// Under the members election a Service that no policy groups has no
// Lease: explain says so from the groups and does not go on to the Lease
// election's "nobody holds Lease".
func TestAskLeaseHolder(t *testing.T) {
	for _, tt := range []struct {
		name                           string
		members, grouped, answeredHere bool
		want                           bool
	}{
		{"members, in no group", true, false, false, false},
		{"members, grouped, another node answers", true, true, false, true},
		{"members, this node answers", true, true, true, false},
		{"lease election, another node answers", false, false, false, true},
		{"lease election, this node answers", false, false, true, false},
	} {
		if got := askLeaseHolder(tt.members, tt.grouped, tt.answeredHere); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
