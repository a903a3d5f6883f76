package members

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/hive/cell"

	"github.com/heraldlb/herald/test/logbuf"
)

// degradedHealth records the last degraded reason.
type degradedHealth struct {
	cell.Health
	mu     sync.Mutex
	reason string
}

func (h *degradedHealth) OK(string) {}
func (h *degradedHealth) Degraded(reason string, _ error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reason = reason
}

// The peer port taken must not end the member protocol for good while
// the agent runs on: the node says so, once, and starts once it can.
func TestStartRetriedWhilePortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := taken.Addr().(*net.TCPAddr).Port
	var logs logbuf.Buffer
	r, _ := newTestRunner(t)
	r.Log = slog.New(slog.NewTextHandler(&logs, nil))
	r.m = newMembers(r.Log, "node1")
	health := &degradedHealth{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan bool, 1)
	go func() {
		started <- r.startRetrying(ctx, health, netip.MustParseAddr("127.0.0.1"), port, []byte("0123456789abcdef0123456789abcdef"))
	}()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), "Cannot start the member protocol"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("want the taken port logged:\n%s", logs.String())
		}
	}
	time.Sleep(2500 * time.Millisecond) // two more attempts, not logged again
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Fatalf("want the failure logged once while it lasts, got %d:\n%s", n, logs.String())
	}
	health.mu.Lock()
	reason := health.reason
	health.mu.Unlock()
	if reason != "member protocol" {
		t.Fatalf("health degraded for %q, want \"member protocol\"", reason)
	}
	taken.Close()
	select {
	case ok := <-started:
		if !ok {
			t.Fatal("startRetrying gave up while ctx was live")
		}
		r.m.stop()
	case <-time.After(time.Minute):
		t.Fatalf("the member protocol never started once the port was free:\n%s", logs.String())
	}
}
