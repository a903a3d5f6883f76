package members

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

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
	waitUntil("echoes confirm node1", func() bool { return time.Until(ms[0].confirmed().until) > 0 })

	// node3 stops dead: no leave message. node1 and node2 suspect it
	// before they declare it dead; meanwhile memberlist lists it with
	// State StateAlive, which is why a peer cannot refuse to confirm a
	// node it suspects (see confirmWindow). Should memberlist start
	// reporting suspicion there, this fails, and the echo can use it.
	_ = ms[2].ml.Load().Shutdown()
	listed := 0
	took := waitUntil("node3 dead for node1 and node2", func() bool {
		if n := memberNamed(ms[0].ml.Load().Members(), "node3"); n != nil {
			listed++
			if n.State != memberlist.StateAlive {
				t.Fatalf("memberlist lists node3 with state %v: it now reports suspicion, and echoes should be confirmed only for unsuspected nodes", n.State)
			}
		}
		return state(ms[0], "node3") == tables.MemberDead && state(ms[1], "node3") == tables.MemberDead
	})
	if memberNamed(ms[0].ml.Load().Members(), "node3") != nil {
		t.Fatal("node1 still lists node3, which it holds dead")
	}
	t.Logf("node3 declared dead after %s, listed as alive in %d polls until then", took, listed)
}

// A peer confirms a node its memberlist lists (suspected ones included),
// never one it does not know or holds dead or left.
func TestMemberNamed(t *testing.T) {
	members := []*memberlist.Node{{Name: "node1"}, {Name: "node2"}}
	if n := memberNamed(members, "node2"); n == nil || n.Name != "node2" {
		t.Errorf("memberNamed(node2) = %v, want node2", n)
	}
	if n := memberNamed(members, "node3"); n != nil {
		t.Errorf("memberNamed(node3) = %v, want nil: node3 is not a member", n)
	}
}

// A confirmation counts from when its request was sent, never from when
// the answer arrived; answers to unknown requests count for nothing, and
// an older answer does not shorten the window.
func TestConfirmationCountsFromSend(t *testing.T) {
	m := newMembers(slog.New(slog.DiscardHandler), "node1")
	if !m.confirmed().until.IsZero() {
		t.Fatal("confirmed before any echo")
	}
	t0 := time.Now().Add(-time.Second) // sent a second ago, answered now
	m.sent[1], m.sent[2] = t0, t0.Add(100*time.Millisecond)
	m.NotifyMsg(echoMessage(echoReply, 2, "node2"))
	if got, want := m.confirmed().until, t0.Add(100*time.Millisecond+confirmWindow); !got.Equal(want) {
		t.Errorf("after the answer to request 2: confirmed until %s, want %s (its send time + %s)", got, want, confirmWindow)
	}
	m.NotifyMsg(echoMessage(echoReply, 1, "node3"))
	m.NotifyMsg(echoMessage(echoReply, 7, "node3"))
	if got, want := m.confirmed().until, t0.Add(100*time.Millisecond+confirmWindow); !got.Equal(want) {
		t.Errorf("after an older and an unknown answer: confirmed until %s, want still %s", got, want)
	}
	if confirmWindow > suspicionMult*probeInterval {
		t.Errorf("confirmWindow %s exceeds memberlist's shortest suspicion %s", confirmWindow, suspicionMult*probeInterval)
	}
}

// A node with another peer secret cannot join, and nobody confirms it:
// every packet is encrypted and authenticated with the secret's key.
func TestWrongSecretCannotJoin(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	good, intruder := newMembers(log, "node1"), newMembers(log, "intruder")
	if err := good.start(netip.MustParseAddr("127.0.0.1"), 27953, []byte("the cluster's secret, long enough")); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = good.ml.Load().Shutdown() }()
	if err := intruder.start(netip.MustParseAddr("127.0.0.1"), 27954, []byte("another secret, also long enough")); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = intruder.ml.Load().Shutdown() }()

	if n, err := intruder.ml.Load().Join([]string{"127.0.0.1:27953"}); err == nil || n != 0 {
		t.Fatalf("join with the wrong secret: %d nodes contacted, error %v; want none and an error", n, err)
	}
	// Echoes sent anyway, by the intruder to the member it was told of
	// and the other way round, go unanswered.
	for range 20 {
		intruder.echo(0)
		good.echo(0)
		time.Sleep(10 * time.Millisecond)
	}
	if memberNamed(good.ml.Load().Members(), "intruder") != nil || memberNamed(intruder.ml.Load().Members(), "node1") != nil {
		t.Fatal("the nodes list each other despite different secrets")
	}
	if !intruder.confirmed().until.IsZero() || !good.confirmed().until.IsZero() {
		t.Fatal("a node was confirmed by a peer with another secret")
	}
}

// The run of confirmations: it goes on while each answered request was
// sent before the confirmation of the one before it ran out, and begins
// again after a gap, however late the answers arrive.
func TestConfirmationRun(t *testing.T) {
	t0 := time.Now().Add(-10 * time.Second)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	m := newMembers(slog.New(slog.DiscardHandler), "node1")
	for i, s := range []struct {
		name      string
		sent      int // ms, the answered request's send time
		wantSince int // ms
	}{
		{"the first answer begins a run", 0, 0},
		{"sent while the last confirmation held: the run goes on", 250, 0},
		{"the same, again", 540, 0},
		{"sent just as the last one ran out: a gap, a new run", 540 + int(confirmWindow/time.Millisecond), 840},
		{"sent long after: a new run", 2000, 2000},
		{"answered out of order, older: changes nothing", 1900, 2000},
	} {
		seq := uint64(i + 1)
		m.sent[seq] = at(s.sent)
		m.NotifyMsg(echoMessage(echoReply, seq, "node2"))
		c := m.confirmed()
		if !c.since.Equal(at(s.wantSince)) {
			t.Errorf("%s: run since %s, want %dms", s.name, c.since.Sub(t0), s.wantSince)
		}
	}
}
