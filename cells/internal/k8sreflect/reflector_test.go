package k8sreflect

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/heraldlb/herald/cells/internal/reconnect"
	"github.com/heraldlb/herald/tables"
)

// fakeServer is an API server that can go away: while down, every call
// is refused as a dial error, as when kube-apiserver is not running.
type fakeServer struct {
	mu       sync.Mutex
	services map[string]*corev1.Service
	rv       int
	watchers []*watch.FakeWatcher
	down     atomic.Bool
	lists    atomic.Int64
}

var refused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

func (s *fakeServer) set(names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.services = map[string]*corev1.Service{}
	for _, n := range names {
		s.rv++
		s.services[n] = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, ResourceVersion: strconv.Itoa(s.rv)}}
	}
}

func (s *fakeServer) List(_ context.Context, _ metav1.ListOptions) (*corev1.ServiceList, error) {
	if s.down.Load() {
		return nil, refused
	}
	s.lists.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	l := &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(s.rv)}}
	for _, svc := range s.services {
		l.Items = append(l.Items, *svc.DeepCopy())
	}
	return l, nil
}

func (s *fakeServer) Watch(_ context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	if s.down.Load() {
		return nil, refused
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := watch.NewFake()
	s.watchers = append(s.watchers, w)
	return w, nil
}

// kill takes the server down and ends its watches, as a SIGKILL does.
func (s *fakeServer) kill() {
	s.down.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.watchers {
		w.Stop()
	}
	s.watchers = nil
}

// health records the reflector's reports; at each OK it runs check.
type health struct {
	mu    sync.Mutex
	level cell.Level
	check func()
}

func (h *health) OK(string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.level = cell.StatusOK
	if h.check != nil {
		h.check()
	}
}
func (h *health) Stopped(string) {}
func (h *health) Degraded(string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.level = cell.StatusDegraded
}
func (h *health) NewScope(string) cell.Health { return h }
func (h *health) Close()                      {}
func (h *health) get() cell.Level {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.level
}

// TestReflectorAfterOutage: while the API server is gone the reflector is
// Degraded and waits at the gate; once the probe succeeds it lists again,
// and its health turns OK only with that list in the table (not when a
// call merely succeeds), so a change made while it was away is there.
func TestReflectorAfterOutage(t *testing.T) {
	db := statedb.New()
	tbl, err := tables.NewServicesTable(db)
	if err != nil {
		t.Fatal(err)
	}
	srv := &fakeServer{}
	srv.set("a")
	probes := atomic.Int64{}
	gate := reconnect.New(t.Context(), reconnect.Policy{ProbeInitial: time.Millisecond, ProbeCap: 5 * time.Millisecond, Spread: time.Millisecond, MissCap: 50 * time.Millisecond},
		func(context.Context) error {
			probes.Add(1)
			if srv.down.Load() {
				return refused
			}
			return nil
		}, slog.New(slog.DiscardHandler))
	r := &reflector[*corev1.Service, *tables.Service]{
		name: "services", db: db, table: tbl, log: slog.New(slog.DiscardHandler), gate: gate,
		lw: ListWatch[*corev1.ServiceList](srv, ""), example: &corev1.Service{}, transform: tables.ServiceFromK8s,
	}
	names := func() []string {
		var out []string
		for s := range tbl.All(db.ReadTxn()) {
			out = append(out, s.Name)
		}
		slices.Sort(out)
		return out
	}
	var want atomic.Value
	want.Store([]string{"a"})
	h := &health{}
	h.check = func() {
		if got := names(); !slices.Equal(got, want.Load().([]string)) {
			t.Errorf("health OK with the table holding %v, want %v", got, want.Load())
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- r.run(ctx, h, func(statedb.WriteTxn) {}) }()
	defer func() { cancel(); <-done }()

	waitUntil(t, func() bool { return h.get() == cell.StatusOK })
	srv.kill()
	waitUntil(t, func() bool { return h.get() == cell.StatusDegraded })
	// Changed while the reflector cannot see it.
	srv.set("b")
	want.Store([]string{"b"})
	listsBefore := srv.lists.Load()
	time.Sleep(20 * time.Millisecond)
	srv.down.Store(false)
	waitUntil(t, func() bool { return h.get() == cell.StatusOK })
	if got := names(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("table holds %v after the outage, want [b]", got)
	}
	if srv.lists.Load() == listsBefore {
		t.Fatal("no list after the outage")
	}
	if probes.Load() == 0 {
		t.Fatal("the gate never probed")
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestUntilNextWrite(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		sinceLast time.Duration
		noneYet   bool
		want      time.Duration
	}{
		{name: "first write", noneYet: true, want: 0},
		{name: "right after a write", sinceLast: 0, want: burstWriteInterval},
		{name: "within the interval", sinceLast: 3 * time.Millisecond, want: burstWriteInterval - 3*time.Millisecond},
		{name: "interval over", sinceLast: burstWriteInterval, want: 0},
		{name: "after a quiet spell", sinceLast: time.Second, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := t0
			if tc.noneYet {
				last = time.Time{}
			}
			if got := untilNextWrite(t0.Add(tc.sinceLast), last); got != tc.want {
				t.Errorf("untilNextWrite = %v, want %v", got, tc.want)
			}
		})
	}
}
