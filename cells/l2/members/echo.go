package members

import (
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// The echoes that confirm this node is alive in its peers' view: every
// echoInterval it asks one peer, in turn, and a peer answers for a node
// it lists as a member. An answer lets this node answer until
// confirmWindow after the request was sent.

// echo asks the next peer to confirm that this node is a member in its
// view. Peers are taken in turn: with k peers each is asked every k
// intervals, and one answer per confirmWindow is enough.
func (m *members) echo(turn int) {
	ml := m.ml.Load()
	if ml == nil {
		return
	}
	var peers []*memberlist.Node
	for _, n := range ml.Members() {
		if n.Name != m.self {
			peers = append(peers, n)
		}
	}
	if len(peers) == 0 {
		return
	}
	slices.SortFunc(peers, func(a, b *memberlist.Node) int { return strings.Compare(a.Name, b.Name) })
	peer := peers[turn%len(peers)]
	m.mu.Lock()
	m.seq++
	seq := m.seq
	// The send time is taken before the send: a pause after it only makes
	// the confirmation older, never younger.
	m.sent[seq] = time.Now()
	for s, at := range m.sent {
		if time.Since(at) > confirmWindow {
			delete(m.sent, s)
		}
	}
	m.mu.Unlock()
	_ = ml.SendBestEffort(peer, echoMessage(echoRequest, seq, m.self))
}

// confirmation is until when the peers' answers let this node answer,
// and since when they have done so without a gap (zero, zero: never).
type confirmation struct{ since, until time.Time }

// confirmed is what the peers' answers confirm so far.
func (m *members) confirmed() confirmation {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.echoedAt.IsZero() {
		return confirmation{}
	}
	return confirmation{since: m.echoedSince, until: m.echoedAt.Add(confirmWindow)}
}

func (c confirmation) equal(o confirmation) bool {
	return c.since.Equal(o.since) && c.until.Equal(o.until)
}

// Echo messages: a request carries a sequence number and the sender's
// name; a peer answers only if the sender is a member in its view (not
// dead, not left), so an answer means "not declared dead by me", not just
// "reachable". It cannot mean "not suspected by me": see confirmWindow.
const (
	echoRequest byte = 1
	echoReply   byte = 2
)

func echoMessage(kind byte, seq uint64, from string) []byte {
	b := make([]byte, 9, 9+len(from))
	b[0] = kind
	binary.BigEndian.PutUint64(b[1:], seq)
	return append(b, from...)
}

// NotifyMsg handles echo messages (memberlist.Delegate).
func (m *members) NotifyMsg(b []byte) {
	if len(b) < 9 {
		return
	}
	seq, from := binary.BigEndian.Uint64(b[1:9]), string(b[9:])
	switch b[0] {
	case echoRequest:
		ml := m.ml.Load()
		if ml == nil {
			return
		}
		if n := memberNamed(ml.Members(), from); n != nil {
			_ = ml.SendBestEffort(n, echoMessage(echoReply, seq, m.self))
		}
	case echoReply:
		m.mu.Lock()
		at, ok := m.sent[seq]
		delete(m.sent, seq)
		if ok && at.After(m.echoedAt) {
			// A request sent once the last confirmation had run out
			// begins a new run: in between, this node was not
			// confirmed.
			if m.echoedAt.IsZero() || !at.Before(m.echoedAt.Add(confirmWindow)) {
				m.echoedSince = at
			}
			m.echoedAt = at
		}
		m.mu.Unlock()
		if ok {
			m.wake()
		}
	}
}

// memberNamed returns the member called name, or nil. memberlist's
// Members() leaves out the nodes it holds dead or left and lists the ones
// it suspects, all with State StateAlive (the field is not kept current).
func memberNamed(members []*memberlist.Node, name string) *memberlist.Node {
	for _, n := range members {
		if n.Name == name {
			return n
		}
	}
	return nil
}
