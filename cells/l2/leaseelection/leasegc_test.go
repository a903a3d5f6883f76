package leaseelection

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/tables"
)

func TestAbandoned(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, renewedAgo time.Duration) *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		if holder != "" {
			l.Spec.HolderIdentity = ptr.To(holder)
		}
		l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-renewedAgo)}
		return l
	}
	tests := []struct {
		name string
		l    *coordinationv1.Lease
		want bool
	}{
		{"held and fresh", lease("node1", 2*time.Second), false},
		{"held, holder silent for 2 minutes", lease("node1", 2*time.Minute), false},
		{"held, holder silent for 3 minutes", lease("node1", 3*time.Minute), true},
		{"released just now", lease("", 5*time.Second), false},
		{"released 31s ago", lease("", 31*time.Second), true},
	}
	for _, tt := range tests {
		if got := abandoned(tt.l, 15*time.Second, now); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCollectLeases(t *testing.T) {
	now := time.Now()
	kube := fake.NewClientset(
		testLease(tables.L2AnnounceLeasePrefix+"default-gone", "", now.Add(-time.Hour)),
		testLease(tables.L2AnnounceLeasePrefix+"default-web", "node1", now),
		testLease(tables.L2NodeLeasePrefix+"node2", "node2", now.Add(-time.Hour)),
		testLease(tables.L2WitnessLeasePrefix+"node1", "node1", now),
		testLease("herald-lb-ipam", "", now.Add(-time.Hour)),
	)
	log := slog.New(slog.DiscardHandler)

	left, err := collectLeases(context.Background(), kube, "kube-system", announcementLeases, 15*time.Second, now, log)
	if err != nil || left != 1 {
		t.Fatalf("announcement Leases: %d left, %v; want 1 (the held one)", left, err)
	}
	if got := leaseNames(t, kube); !slices.Equal(got, []string{
		tables.L2AnnounceLeasePrefix + "default-web", "herald-l2-node-node2", "herald-l2-witness-node1", "herald-lb-ipam",
	}) {
		t.Fatalf("after collecting the announcement Leases: %v", got)
	}

	left, err = collectLeases(context.Background(), kube, "kube-system", allL2Leases, 15*time.Second, now, log)
	if err != nil || left != 2 {
		t.Fatalf("all L2 Leases: %d left, %v; want 2 (the renewed ones)", left, err)
	}
	if got := leaseNames(t, kube); !slices.Equal(got, []string{
		tables.L2AnnounceLeasePrefix + "default-web", "herald-l2-witness-node1", "herald-lb-ipam",
	}) {
		t.Fatalf("after collecting every L2 Lease: %v", got)
	}
}

// TestCollectUntilNone: with the feature off, the agent collects until no
// L2 Lease is left, so a Lease still renewed by an agent of the rollout is
// collected once that agent has released it; and it gives up at once
// when it may not list Leases.
func TestCollectUntilNone(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	name := tables.L2AnnounceLeasePrefix + "default-web"
	kube := fake.NewClientset(testLease(name, "node1", time.Now()))
	var lists atomic.Int32
	kube.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return false, nil, nil
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		collectUntilNone(context.Background(), kube, "kube-system", 15*time.Second, 5*time.Millisecond, log)
	}()
	for lists.Load() < 3 {
		select {
		case <-done:
			t.Fatal("stopped while a Lease was left")
		case <-time.After(5 * time.Millisecond):
		}
	}
	// The last agent that ran the feature releases its Lease as it stops.
	if _, err := kube.CoordinationV1().Leases("kube-system").Update(context.Background(),
		testLease(name, "", time.Now().Add(-time.Hour)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still collecting after the last Lease was released")
	}
	if got := leaseNames(t, kube); len(got) != 0 {
		t.Errorf("left: %v", got)
	}

	forbidden := fake.NewClientset()
	forbidden.PrependReactor("list", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", errors.New("no"))
	})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		collectUntilNone(context.Background(), forbidden, "kube-system", 15*time.Second, time.Hour, log)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("an agent that may not list Leases keeps trying")
	}
}

func testLease(name, holder string, renewed time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
	return l
}

func leaseNames(t *testing.T, kube *fake.Clientset) []string {
	t.Helper()
	list, err := kube.CoordinationV1().Leases("kube-system").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range list.Items {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	return names
}
