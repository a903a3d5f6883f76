package k8swatch

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/heraldlb/herald/tables"
)

// Requests the ground floor cannot serve stop the agent at start, saying
// which table and why.
func TestBadRequests(t *testing.T) {
	for _, tc := range []struct {
		name     string
		requests []tables.Reflection
		want     string
	}{
		{name: "unknown table", requests: []tables.Reflection{{Table: "l2-announce"}},
			want: `no Kubernetes kind is reflected into table "l2-announce"`},
		{name: "namespace of a cluster-wide kind", requests: []tables.Reflection{{Table: tables.NodesTableName, Namespace: "kube-system"}},
			want: `table "nodes" holds objects without a namespace`},
		{name: "two namespaces for one table", requests: []tables.Reflection{
			{Table: tables.L2LeasesTableName, Namespace: "kube-system"}, {Table: tables.L2LeasesTableName}},
			want: `table "l2-leases" asked for in namespaces "kube-system" and "(all)"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := reflectRequested(params{Requests: tc.requests, Log: slog.New(slog.DiscardHandler)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
