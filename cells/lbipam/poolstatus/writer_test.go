package poolstatus

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/statusstub"
)

const poolName = "blue"

// conflict is the status written in every case: a conflicting pool, so
// that a write that happens records an Event and one that does not, none.
var conflict = "Pool conflicts since CIDR '198.18.7.0/24' overlaps CIDR '198.18.7.0/24' from IP Pool 'red'"

type fixture struct {
	*statusstub.Standing
	api *statusstub.Server
	w   *statusWriter
}

// newFixture wires a status writer as the cell does (the leadership table
// read through leader.Fence, a real client) against a stub of the
// pool's status subresource at resourceVersion serverRV; the agent last
// read the pool at resourceVersion 7.
func newFixture(t *testing.T, serverRV int, l *tables.Leadership) *fixture {
	t.Helper()
	st := statusstub.NewStanding(t, l)
	pools, err := tables.NewLBPoolsTable(st.DB)
	if err != nil {
		t.Fatal(err)
	}
	wtxn := st.DB.WriteTxn(pools)
	_, _, _ = pools.Insert(wtxn, &tables.LBPool{Name: poolName, UID: "uid-1", ResourceVersion: "7", Generation: 1})
	wtxn.Commit()

	api := statusstub.New(t, "/apis/cilium.io/v2alpha1/ciliumloadbalancerippools/"+poolName+"/status", serverRV, func(rv string) any {
		return &v2alpha1.CiliumLoadBalancerIPPool{
			TypeMeta:   metav1.TypeMeta{Kind: "CiliumLoadBalancerIPPool", APIVersion: "cilium.io/v2alpha1"},
			ObjectMeta: metav1.ObjectMeta{Name: poolName, ResourceVersion: rv},
		}
	})
	client, err := versioned.NewForConfig(api.Config())
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{Standing: st, api: api, w: &statusWriter{
		fence: leader.Fence(st.DB, st.Leadership, tables.LBIPAMLease), client: client, pools: pools, events: st.Events,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now,
	}}
}

// update writes the pool's status computed in term.
func (f *fixture) update(term uint64) error {
	ctx, end := statusstub.WriteContext()
	defer end()
	st := &tables.LBPoolStatus{Name: poolName, ObservedGeneration: 1, Conflicting: true, ConflictMessage: conflict,
		Total: "256", Available: "256", Used: "0", Term: term}
	return f.w.Update(ctx, f.DB.ReadTxn(), 0, st)
}

// TestWritesAreFenced: a pool's status reaches the API server only while
// the LB IPAM term it was computed in is valid, and only as a patch
// conditional on the resourceVersion it was computed from.
func TestWritesAreFenced(t *testing.T) {
	for _, tt := range statusstub.FenceCases(tables.LBIPAMLease, "pool") {
		t.Run(tt.Name, func(t *testing.T) {
			f := newFixture(t, tt.ServerRV, tt.Leadership)
			err := f.update(tt.DecidedIn)

			if r, ok := f.api.Sent(t, tt.Sent); ok {
				if r.ResourceVersion != "7" {
					t.Errorf("patch conditional on resourceVersion %q, want the version read, 7", r.ResourceVersion)
				}
				if uid := r.Body["metadata"].(map[string]any)["uid"]; uid != "uid-1" {
					t.Errorf("patch conditional on uid %v, want uid-1", uid)
				}
				if r.ContentType != "application/merge-patch+json" {
					t.Errorf("content type %q, want a merge patch", r.ContentType)
				}
			}

			if tt.Err == nil {
				if err != nil {
					t.Fatalf("Update: %v", err)
				}
				if ev := f.RecordedEvents(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning "+EventConflict+" "+conflict) {
					t.Fatalf("events %q, want the conflict", ev)
				}
				return
			}
			if err == nil || !tt.Err(err) || !strings.Contains(err.Error(), tt.Want) {
				t.Fatalf("Update error %v, want one containing %q", err, tt.Want)
			}
			if !strings.HasPrefix(err.Error(), "pool "+poolName+": ") {
				t.Errorf("error %q does not name the pool", err)
			}
			if ev := f.RecordedEvents(); len(ev) > 0 {
				t.Fatalf("events %q for a write that did not happen", ev)
			}
		})
	}
}

// TestWriteAbandonedAtDeadline: a patch still in flight when the term's
// validity ends is abandoned then, not left to land late.
func TestWriteAbandonedAtDeadline(t *testing.T) {
	f := newFixture(t, 7, nil)
	f.api.Hold()
	// The term is valid for another second from now, right before the write.
	valid := time.Now().Add(time.Second)
	f.Lead(&tables.Leadership{Lease: tables.LBIPAMLease, Leading: true, Term: 1, ValidUntil: valid})

	err := f.update(1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Update error %v, want the term's deadline", err)
	}
	f.api.AbandonedAt(t, valid)
	if ev := f.RecordedEvents(); len(ev) > 0 {
		t.Fatalf("events %q for a write that did not happen", ev)
	}
}
