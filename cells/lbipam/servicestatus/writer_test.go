package servicestatus

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/statusstub"
)

const (
	ns   = "tenant"
	name = "web"
	ip   = "198.18.7.1"
)

// fixture is a status writer wired as the cell wires it (the leadership
// table read through leader.Fence, a real client) against a stub of the
// Service's status subresource at resourceVersion 7.
type fixture struct {
	*statusstub.Standing
	api *statusstub.Server
	w   *statusWriter
}

func newFixture(t *testing.T, serverRV int, l *tables.Leadership) *fixture {
	t.Helper()
	st := statusstub.NewStanding(t, l)
	services, err := tables.NewServicesTable(st.DB)
	if err != nil {
		t.Fatal(err)
	}
	wtxn := st.DB.WriteTxn(services)
	_, _, _ = services.Insert(wtxn, &tables.Service{
		Namespace: ns, Name: name, UID: "uid-1", ResourceVersion: "7", Generation: 1,
		Type: corev1.ServiceTypeLoadBalancer, CreationTimestamp: time.Now(),
	})
	wtxn.Commit()

	api := statusstub.New(t, "/api/v1/namespaces/"+ns+"/services/"+name+"/status", serverRV, func(rv string) any {
		return &corev1.Service{
			TypeMeta:   metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv},
		}
	})
	kube, err := kubernetes.NewForConfig(api.Config())
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{Standing: st, api: api, w: &statusWriter{
		fence: leader.Fence(st.DB, st.Leadership, tables.LBIPAMLease), kube: kube, services: services, events: st.Events,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now,
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "test_latency"}),
	}}
}

// update writes the decision that the Service gets ip, made in term.
func (f *fixture) update(term uint64) error {
	ctx, end := statusstub.WriteContext()
	defer end()
	a := &tables.LBAllocation{
		Namespace: ns, Name: name, Generation: 1, Managed: true, Satisfied: true, Reason: tables.ReasonSatisfied,
		IPs:  []tables.AllocatedIP{{Addr: netip.MustParseAddr(ip), Pool: "pool"}},
		Term: term,
	}
	return f.w.Update(ctx, f.DB.ReadTxn(), 0, a)
}

// TestWritesAreFenced: a decision reaches the API server only while the
// LB IPAM term it was made in is valid, and only as a write conditional
// on the resourceVersion it was checked against.
func TestWritesAreFenced(t *testing.T) {
	for _, tt := range statusstub.FenceCases(tables.LBIPAMLease, "Service") {
		t.Run(tt.Name, func(t *testing.T) {
			f := newFixture(t, tt.ServerRV, tt.Leadership)
			err := f.update(tt.DecidedIn)

			if r, ok := f.api.Sent(t, tt.Sent); ok {
				if r.ResourceVersion != "7" {
					t.Errorf("write conditional on resourceVersion %q, want the version read, 7", r.ResourceVersion)
				}
				if r.ContentType != "application/apply-patch+yaml" {
					t.Errorf("content type %q, want a server-side apply", r.ContentType)
				}
				if !strings.Contains(stringOf(r.Body), ip) {
					t.Errorf("body %v does not carry %s", r.Body, ip)
				}
			}

			if tt.Err == nil {
				if err != nil {
					t.Fatalf("Update: %v", err)
				}
				if ev := f.RecordedEvents(); len(ev) != 1 || ev[0] != "Normal "+EventAssigned+" Assigned IP "+ip {
					t.Fatalf("events %q, want the assignment", ev)
				}
				return
			}
			if err == nil || !tt.Err(err) || !strings.Contains(err.Error(), tt.Want) {
				t.Fatalf("Update error %v, want one containing %q", err, tt.Want)
			}
			if !strings.HasPrefix(err.Error(), "service "+ns+"/"+name+": ") {
				t.Errorf("error %q does not name the Service", err)
			}
			// Nothing was written, so nothing is announced.
			if ev := f.RecordedEvents(); len(ev) > 0 {
				t.Fatalf("events %q for a write that did not happen", ev)
			}
		})
	}
}

// TestFenceReadsLeadershipAtEachWrite: the fence looks at the leadership
// table when the write is about to go out, not when the writer was set
// up: once a new term began, a decision of the old one stays unsent.
func TestFenceReadsLeadershipAtEachWrite(t *testing.T) {
	f := newFixture(t, 7, &tables.Leadership{Lease: tables.LBIPAMLease, Leading: true, Term: 1, ValidUntil: time.Now().Add(time.Hour)})
	if err := f.update(1); err != nil {
		t.Fatalf("write in term 1: %v", err)
	}
	// The agent lost the Lease and won it back: term 2.
	f.Lead(&tables.Leadership{Lease: tables.LBIPAMLease, Leading: true, Term: 2, ValidUntil: time.Now().Add(time.Hour)})
	if err := f.update(1); !errors.Is(err, tables.ErrNotLeader) {
		t.Fatalf("write of term 1 in term 2: err = %v, want ErrNotLeader", err)
	}
	if n := len(f.api.Requests()); n != 1 {
		t.Fatalf("%d requests reached the API server, want only the one of term 1", n)
	}
}

// TestWriteAbandonedAtDeadline: a request still in flight when the term's
// validity ends is abandoned then, not left to land late.
func TestWriteAbandonedAtDeadline(t *testing.T) {
	f := newFixture(t, 7, nil)
	f.api.Hold() // the API server does not answer (overloaded, or a slow link)
	// The term is valid for another second from now, right before the write.
	valid := time.Now().Add(time.Second)
	f.Lead(&tables.Leadership{Lease: tables.LBIPAMLease, Leading: true, Term: 1, ValidUntil: valid})

	err := f.update(1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Update error %v, want the term's deadline", err)
	}
	if r := f.api.AbandonedAt(t, valid); r.ResourceVersion != "7" {
		t.Errorf("held write conditional on resourceVersion %q, want 7", r.ResourceVersion)
	}
	if ev := f.RecordedEvents(); len(ev) > 0 {
		t.Fatalf("events %q for a write that did not happen", ev)
	}
}

func stringOf(v any) string {
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			b.WriteString(v + " ")
		}
	}
	walk(v)
	return b.String()
}
