package k8swatch

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/internal/k8sreflect"
	"github.com/heraldlb/herald/tables"
)

// Requests the ground floor cannot serve stop the agent at start, saying
// which table and why.
func TestBadRequests(t *testing.T) {
	for _, tc := range []struct {
		name     string
		requests []tables.Reflection
		kinds    []k8sreflect.Kind // besides the ground floor's
		want     string
	}{
		{name: "unknown table", requests: []tables.Reflection{{Table: "l2-announce"}},
			want: `no Kubernetes kind is reflected into table "l2-announce"`},
		{name: "namespace of a cluster-wide kind", requests: []tables.Reflection{{Table: tables.NodesTableName, Namespace: "kube-system"}},
			want: `table "nodes" holds objects without a namespace`},
		{name: "two namespaces for one table", requests: []tables.Reflection{
			{Table: tables.ServicesTableName, Namespace: "kube-system"}, {Table: tables.ServicesTableName}},
			want: `table "services" asked for in namespaces "kube-system" and "(all)"`},
		{name: "two kinds for one table", kinds: []k8sreflect.Kind{{Table: tables.NodesTableName}},
			want: `two Kubernetes kinds are defined for table "nodes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The ground floor's own kinds, as the cell provides them.
			db := statedb.New()
			services, err := tables.NewServicesTable(db)
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := tables.NewNodesTable(db)
			if err != nil {
				t.Fatal(err)
			}
			kinds := []k8sreflect.Kind{serviceKind(services).Kind, nodeKind(nodes).Kind}
			err = reflectRequested(params{Kinds: append(kinds, tc.kinds...), Requests: tc.requests, Log: slog.New(slog.DiscardHandler)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
