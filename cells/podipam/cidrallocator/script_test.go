package cidrallocator

import (
	"testing"

	"github.com/cilium/hive/cell"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/api/client/clientset/versioned/fake"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/scripthive"
)

// TestScript runs the scenarios in testdata/*.txtar: pools, Nodes and
// CiliumNodes (with what their agents request and release) go in as
// manifests (k8s/apply, k8s/delete); the allocator's decisions come out
// (db/cmp pod-cidr-decisions, pod-ip-pool-status). Its writers send the
// decisions to a client that keeps them to itself: the scenarios compare
// decisions, the API server's side is test/multipool's.
func TestScript(t *testing.T) {
	scripthive.Test(t, []string{"--ipam=multi-pool"},
		cell.Group(
			scripthive.Kube(),
			scripthive.Leader(tables.PodIPAMLease),
			cell.Module("api-fake", "A client that keeps what it is sent",
				cell.Provide(
					func() versioned.Interface { return fake.NewSimpleClientset() },
					func() record.EventRecorder { return record.NewFakeRecorder(1000) },
				),
			),
		),
		Cell)
}
