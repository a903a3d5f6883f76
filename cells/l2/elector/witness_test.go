package elector

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A peer's witness record counts as expired only once this node saw it
// renewed and then unchanged for WitnessExpiry, with the watch alive.
func TestWitnessGone(t *testing.T) {
	e := &elector{witnesses: map[string]seenWitness{}}
	t0 := time.Unix(1000, 0)
	row := func(v string) []*tables.L2Lease {
		return []*tables.L2Lease{{Name: tables.L2WitnessLeasePrefix + "node2", ResourceVersion: v}}
	}
	e.observeWitnesses(t0, row("1"))
	if e.witnessGone("node2", t0.Add(10*time.Second), true) {
		t.Fatal("a record never seen renewed counts as expired")
	}
	e.observeWitnesses(t0.Add(250*time.Millisecond), row("2"))
	after := t0.Add(250*time.Millisecond + l2config.WitnessExpiry)
	if e.witnessGone("node2", after, true) {
		t.Fatal("expired at exactly WitnessExpiry after its last change")
	}
	if !e.witnessGone("node2", after.Add(time.Millisecond), true) {
		t.Fatal("not expired after WitnessExpiry without a change")
	}
	if e.witnessGone("node2", after.Add(time.Millisecond), false) {
		t.Fatal("expired while the watch does not deliver")
	}
	if e.witnessGone("node3", after, true) {
		t.Fatal("a node without a record counts as expired")
	}
	e.observeWitnesses(after.Add(time.Millisecond), row("3"))
	if e.witnessGone("node2", after.Add(2*time.Millisecond), true) {
		t.Fatal("still expired after a renewal")
	}
}

// The witness record is owned by this node's Node, on its creation and
// on every renewal (an update replaces the whole object).
func TestWitnessRecordOwnedByNode(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "uid-1"}})
	e := &elector{params: params{Kube: kube}, self: "node1", recordLeases: kube.CoordinationV1().Leases("kube-system")}
	version := ""
	for range 2 {
		next, err := e.writeWitness(ctx, version, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		// The fake API server keeps no resourceVersion: any non-empty one
		// makes the next write an update.
		version = next + "1"
		l, err := kube.CoordinationV1().Leases("kube-system").Get(ctx, tables.L2WitnessLeasePrefix+"node1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || l.OwnerReferences[0].UID != "uid-1" {
			t.Fatalf("after a write from version %q: owner references %+v, want Node node1", version, l.OwnerReferences)
		}
	}
}
