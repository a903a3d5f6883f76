package servicestatus

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestPacerInterval(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		sinceWrite time.Duration
		want       time.Duration
	}{
		{0, busyEvery},
		{quietAfter - time.Millisecond, busyEvery},
		{quietAfter, idleEvery},
		{time.Hour, idleEvery},
	} {
		if got := interval(now, now.Add(-tc.sinceWrite)); got != tc.want {
			t.Errorf("%v after the last write: wait %v, want %v", tc.sinceWrite, got, tc.want)
		}
	}
	if got := interval(now, time.Time{}); got != idleEvery {
		t.Errorf("no write yet: wait %v, want %v", got, idleEvery)
	}
}

type sink struct {
	mu   sync.Mutex
	msgs []string
}

func (s *sink) Eventf(_ runtime.Object, _, reason, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, reason+": "+fmt.Sprintf(format, args...))
}

func (s *sink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// Every queued Event goes out, in order; what is still queued when the
// agent stops is handed to the recorder at once.
func TestPacerSendsEverythingInOrder(t *testing.T) {
	out := &sink{}
	p := newPacer(out, slog.New(slog.NewTextHandler(io.Discard, nil)))
	svc := &corev1.ObjectReference{Kind: "Service", Name: "web"}
	var want []string
	for i := range 5 {
		p.Eventf(svc, corev1.EventTypeNormal, EventAssigned, "Assigned IP 198.18.0.%d", i)
		want = append(want, fmt.Sprintf("%s: Assigned IP 198.18.0.%d", EventAssigned, i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.run(ctx, nil) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(out.got()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := out.got(); !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}

	// While writes go on, Events wait busyEvery between each other; the
	// ones left at the stop are flushed.
	p.wrote()
	for i := range 3 {
		p.Eventf(svc, corev1.EventTypeNormal, EventReleased, "Released IP 198.18.1.%d", i)
		want = append(want, fmt.Sprintf("%s: Released IP 198.18.1.%d", EventReleased, i))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := out.got(); !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
}

func TestPacerDropsBeyondTheQueue(t *testing.T) {
	out := &sink{}
	p := newPacer(out, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i := range maxQueued + 3 {
		p.Eventf(&corev1.ObjectReference{}, corev1.EventTypeNormal, EventAssigned, "%d", i)
	}
	if len(p.queue) != maxQueued || p.dropped != 3 {
		t.Fatalf("queued %d, dropped %d; want %d and 3", len(p.queue), p.dropped, maxQueued)
	}
	if ev, _, ok := p.next(); !ok || ev.msg != "0" || p.dropped != 0 {
		t.Fatalf("next: %+v %v, dropped %d; want the oldest, and the drops reported", ev, ok, p.dropped)
	}
}
