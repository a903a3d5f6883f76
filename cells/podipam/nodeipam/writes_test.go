package nodeipam

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/api/client/clientset/versioned/fake"
	"github.com/heraldlb/herald/tables"
)

// TestNextSettle: the sync job wakes when the next empty CIDR has settled,
// not on a poll; CIDRs in use wait for nothing.
func TestNextSettle(t *testing.T) {
	s, _, clock := newTestState(tables.IPv4)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24", "198.18.101.0/24")})
	if _, err := s.add(addReq("c1"), v4default); err != nil { // in the first CIDR
		t.Fatal(err)
	}
	if got := s.nextSettle(time.Minute); got != time.Minute {
		t.Fatalf("nextSettle = %s, want 1m (the second CIDR, empty since it came)", got)
	}
	clock.t = clock.t.Add(20 * time.Second)
	if got := s.nextSettle(time.Minute); got != 40*time.Second {
		t.Fatalf("nextSettle = %s, want 40s", got)
	}
	clock.t = clock.t.Add(time.Minute)
	if got := s.nextSettle(time.Minute); got != 0 {
		t.Fatalf("nextSettle = %s once settled, want 0 (releasable's to decide)", got)
	}
}

func newWriteTestAgent(t *testing.T, objs ...runtime.Object) (*agent, *fake.Clientset) {
	t.Helper()
	db := statedb.New()
	tbl, err := newNodeWritesTable(db)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewSimpleClientset(objs...)
	s, _, _ := newTestState(tables.IPv4)
	a := &agent{params: params{DB: db, Writes: tbl, Herald: client, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		node: "node1", state: s, kick: make(chan struct{}, 1)}
	return a, client
}

// TestDecideOnce: a decision taken again is not written again; a new one
// (another version of the CiliumNode) is.
func TestDecideOnce(t *testing.T) {
	a, _ := newWriteTestAgent(t)
	status := func() reconciler.StatusKind {
		w, _, ok := a.Writes.Get(a.DB.ReadTxn(), nodeWritePartIndex.Query(partSpec))
		if !ok {
			t.Fatal("no spec row")
		}
		return w.Status.Kind
	}
	row := func(base string) *nodeWrite {
		return &nodeWrite{Part: partSpec, Op: opRequested, Base: base, Demand: []tables.PoolDemand{{Pool: "default", IPv4: 8}}}
	}
	a.decide(row("1"))
	if k := status(); k != reconciler.StatusKindPending {
		t.Fatalf("status %s, want pending", k)
	}
	wtxn := a.DB.WriteTxn(a.Writes)
	w, _, _ := a.Writes.Get(wtxn, nodeWritePartIndex.Query(partSpec))
	_, _, _ = a.Writes.Insert(wtxn, w.Clone().SetStatus(reconciler.StatusDone()))
	wtxn.Commit()
	a.decide(row("1"))
	if k := status(); k != reconciler.StatusKindDone {
		t.Fatalf("the same decision again: status %s, want done (no second write)", k)
	}
	a.decide(row("2"))
	if k := status(); k != reconciler.StatusKindPending {
		t.Fatalf("a decision on a new version: status %s, want pending", k)
	}
}

// TestReleaseWrite: the writer marks what it releases as it goes out; a
// refused write leaves the CIDR serving, reports the error for the
// health, and fails so that the reconciler retries it.
func TestReleaseWrite(t *testing.T) {
	cn := &v2.CiliumNode{ObjectMeta: metav1.ObjectMeta{Name: "node1", ResourceVersion: "7"}}
	a, client := newWriteTestAgent(t, cn)
	second := netip.MustParsePrefix("198.18.101.0/24")
	allocated := []tables.PoolCIDRs{alloc("default", "198.18.100.0/24", "198.18.101.0/24")}
	a.state.setCIDRs(allocated)
	if _, err := a.state.add(addReq("c1"), v4default); err != nil {
		t.Fatal(err)
	}
	a.state.now = func() time.Time { return time.Unix(1000, 0).Add(time.Hour) }
	row := &nodeWrite{Part: partSpec, Op: opRelease, Base: "7", Allocated: allocated, Demand: a.state.demand()}

	client.PrependReactor("patch", "ciliumnodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the API server is away")
	})
	if err := (nodeWriter{a}).Update(context.Background(), a.DB.ReadTxn(), 0, row); err == nil {
		t.Fatal("a refused release reported no error: the reconciler would not retry it")
	}
	if a.state.cidrs[second].releasing {
		t.Fatal("a refused release left the CIDR marked releasing")
	}
	if a.written.lastErr() == nil {
		t.Fatal("a refused write left no error for the health")
	}

	client.ReactionChain = client.ReactionChain[1:]
	if err := (nodeWriter{a}).Update(context.Background(), a.DB.ReadTxn(), 0, row); err != nil {
		t.Fatal(err)
	}
	if !a.state.cidrs[second].releasing {
		t.Fatal("the released CIDR is not marked releasing")
	}
	if a.written.lastErr() != nil {
		t.Fatalf("error kept after a write went out: %v", a.written.lastErr())
	}
	got, err := client.CiliumV2().CiliumNodes().Get(context.Background(), "node1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.IPAM.Pools.Allocated) != 1 || len(got.Spec.IPAM.Pools.Allocated[0].CIDRs) != 1 || got.Spec.IPAM.Pools.Allocated[0].CIDRs[0] != "198.18.100.0/24" {
		t.Fatalf("allocated after the release = %+v, want only the first CIDR", got.Spec.IPAM.Pools.Allocated)
	}
}
