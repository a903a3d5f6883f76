package l2elector

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

// Three members on loopback: they find each other, confirm each other,
// and notice one that stops answering.
func TestMembersOnLoopback(t *testing.T) {
	secret := []byte("a secret of more than sixteen characters")
	var ms []*members
	for i := range 3 {
		m := newMembers(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), fmt.Sprintf("node%d", i+1))
		if err := m.start(netip.MustParseAddr("127.0.0.1"), 27950+i, secret); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	defer func() {
		for _, m := range ms[:2] {
			_ = m.ml.Load().Shutdown()
		}
	}()
	ms[1].join([]string{"127.0.0.1:27950"})
	ms[2].join([]string{"127.0.0.1:27950"})
	state := func(m *members, node string) string {
		rows, _ := m.snapshot()
		for _, r := range rows {
			if r.Node == node {
				return r.State
			}
		}
		return ""
	}
	waitUntil := func(what string, cond func() bool) time.Duration {
		start := time.Now()
		for !cond() {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("gave up waiting: %s", what)
			}
			for i, m := range ms {
				m.echo(i)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return time.Since(start)
	}
	waitUntil("all alive everywhere", func() bool {
		for _, m := range ms {
			for _, n := range []string{"node1", "node2", "node3"} {
				if state(m, n) != tables.MemberAlive {
					return false
				}
			}
		}
		return true
	})
	waitUntil("echoes confirm node1", func() bool { return time.Until(ms[0].confirmedUntil()) > 0 })

	// node3 stops dead: no leave message.
	_ = ms[2].ml.Load().Shutdown()
	took := waitUntil("node3 dead for node1 and node2", func() bool {
		return state(ms[0], "node3") == tables.MemberDead && state(ms[1], "node3") == tables.MemberDead
	})
	t.Logf("node3 declared dead after %s", took)
}
