package cmd

import (
	"errors"
	"strings"
	"testing"
)

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

// Without the API server the Lease cannot be read: explain says so, with
// the error, instead of only sending the user to kubectl, which fails the
// same way (the node asked may hold the Lease and be silent until it
// renews it).
func TestHolderLinesWithoutTheAPIServer(t *testing.T) {
	err := errors.New(`Get "https://10.0.0.1:6443/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l": dial tcp 10.0.0.1:6443: connect: connection refused`)
	got := holderLines("node2", "kube-system", "l", "", err)
	for _, want := range []string{"not by this node (node2) now", "Lease kube-system/l", "cannot be read", "connection refused", "kubectl -n kube-system get lease l"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if got := holderLines("node2", "kube-system", "l", "node3", nil); !strings.Contains(got, "by node node3 (holder of Lease kube-system/l)") {
		t.Errorf("holder node3: %q", got)
	}
}
