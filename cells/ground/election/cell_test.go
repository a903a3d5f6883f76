package election

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// Short, valid timings: the test waits for handovers, never for expiries.
var timings = tables.LeaseTimings{Duration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond}

// agent is one agent's election cell, asked for one Lease, on a shared
// (fake) API server.
type agent struct {
	h          *hive.Hive
	db         *statedb.DB
	leadership statedb.Table[*tables.Leadership]
	log        *slog.Logger
}

func newAgent(t *testing.T, kube kubernetes.Interface, node string, el tables.Election) *agent {
	a := &agent{log: hivetest.Logger(t, hivetest.LogLevel(slog.LevelError))}
	a.h = hive.NewWithOptions(hive.Options{
		ModulePrivateProviders: cell.ModulePrivateProviders{
			func(r job.Registry, h cell.Health, l *slog.Logger) job.Group { return r.NewGroup(h, job.WithLogger(l)) },
		},
	},
		job.Cell, statedb.Cell, cell.SimpleHealthCell, agentconfig.Cell,
		cell.Provide(
			func() kubernetes.Interface { return kube },
			func() (out struct {
				cell.Out
				Election tables.Election `group:"elections"`
			}) {
				out.Election = el
				return out
			},
		),
		Cell,
		cell.Invoke(func(db *statedb.DB, l statedb.Table[*tables.Leadership]) { a.db, a.leadership = db, l }),
	)
	flags := pflag.NewFlagSet("", pflag.ContinueOnError)
	a.h.RegisterFlags(flags)
	if err := flags.Parse([]string{"--node-name=" + node}); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *agent) standing(lease string) *tables.Leadership {
	l, _, _ := a.leadership.Get(a.db.ReadTxn(), tables.LeadershipLeaseIndex.Query(lease))
	return l
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Two agents campaign for one Lease: one leads, as "<node>_<uuid>", in
// term 1, and the leadership table says so on both; the leader stops and
// releases the Lease, and the other leads.
func TestOneLeaderAndHandover(t *testing.T) {
	kube := fake.NewClientset()
	el := tables.Election{Lease: "herald-test", Timings: timings}
	a, b := newAgent(t, kube, "node1", el), newAgent(t, kube, "node2", el)
	ctx := context.Background()
	if err := a.h.Start(a.log, ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "node1 leads", func() bool { s := a.standing(el.Lease); return s != nil && s.Leading })
	if err := b.h.Start(b.log, ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.h.Stop(b.log, ctx) })

	s := a.standing(el.Lease)
	if s.Term != 1 || !strings.HasPrefix(s.Identity, "node1_") || !s.ValidUntil.After(time.Now()) {
		t.Errorf("node1's standing %+v: want term 1, identity node1_<uuid>, a deadline ahead", s)
	}
	waitUntil(t, "node2 sees node1 hold it", func() bool { s := b.standing(el.Lease); return s != nil && s.Holder == a.standing(el.Lease).Identity })
	if b.standing(el.Lease).Leading {
		t.Fatal("two leaders")
	}
	l, err := kube.CoordinationV1().Leases("kube-system").Get(ctx, el.Lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != s.Identity {
		t.Fatalf("Lease %v (%v): want held by %s", l, err, s.Identity)
	}

	if err := a.h.Stop(a.log, ctx); err != nil {
		t.Fatal(err)
	}
	// Released on the way out: nobody holds it, so the others need not
	// wait for it to expire.
	l, err = kube.CoordinationV1().Leases("kube-system").Get(ctx, el.Lease, metav1.GetOptions{})
	if err != nil || (l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "") {
		t.Fatalf("Lease after node1 stopped: %v (%v), want released", l.Spec.HolderIdentity, err)
	}
	waitUntil(t, "node2 leads", func() bool { return b.standing(el.Lease).Leading })
	if s := b.standing(el.Lease); s.Term != 1 || !strings.HasPrefix(s.Identity, "node2_") {
		t.Errorf("node2's standing %+v: want its own term 1", s)
	}
}

// A Lease asked for with timings that cannot fence stops the agent at
// start, naming the Lease.
func TestInvalidTimings(t *testing.T) {
	bad := tables.Election{Lease: "herald-test", Timings: tables.LeaseTimings{Duration: time.Second, RenewDeadline: 900 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}}
	a := newAgent(t, fake.NewClientset(), "node1", bad)
	err := a.h.Start(a.log, context.Background())
	if err == nil {
		_ = a.h.Stop(a.log, context.Background())
		t.Fatal("started with timings that leave no time for a stale leader's writes")
	}
	if !strings.Contains(err.Error(), "Lease herald-test") {
		t.Errorf("error %q does not name the Lease", err)
	}
}
