package members

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/heraldlb/herald/cells/internal/memberlog"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// The failure detector's timings, and the window a peer's confirmation
// opens (see Documentation/l2-announcements.md, "How a node knows it may
// answer").
//
// memberlist declares a node dead only when a suspicion of it has run
// its course: a node suspects another when a probe of it got no ack
// (direct, indirect or over TCP) within ProbeInterval, or when it hears
// of another node's suspicion; the suspicion ends in death after at least
// minSuspicion (suspicionMult × ProbeInterval below ten nodes, more above;
// suspicionMax times that until a second node suspects too), unless the
// accused refutes it first. A running node refutes as soon as an
// accusation reaches it, and the accuser attaches one to each probe it
// sends it and gossips it, a few times, every gossipInterval.
//
// A node answers until confirmWindow after it sent an echo request that a
// peer answered. A peer answers for a node its memberlist lists, i.e. not
// dead and not left in its view; memberlist does not say whether it
// suspects it (Node.State is never updated: nodeState.State shadows it),
// so the answer cannot mean "not suspected". What the window guarantees:
// a suspicion that starts after the request was sent ends in a death no
// sooner than minSuspicion later, when this node has fallen silent; the
// new owner then still writes the Lease and probes the address before it
// answers. What it does not cover: a suspicion already running when the
// request was sent, by a node that a second one confirmed, whose
// accusations and this node's refutations were all lost although the
// echo went through. Strict would take every peer confirming that it does
// not suspect this node, which memberlist's API cannot tell.
const (
	probeInterval  = 100 * time.Millisecond
	probeTimeout   = 50 * time.Millisecond
	suspicionMult  = 3
	suspicionMax   = 2 // × the minimum, when no other node confirms
	gossipInterval = 50 * time.Millisecond
	minSuspicion   = suspicionMult * probeInterval
	confirmWindow  = minSuspicion
	// echoInterval: how often this node asks a peer to confirm it; a few
	// lost packets in a row stay within confirmWindow. The elector judges
	// its standing as often.
	echoInterval = l2config.EchoInterval
	// joinInterval: how often nodes not in the cluster are asked to join.
	joinInterval = time.Second
)

// nodeMeta is what each member publishes to the others (memberlist node
// metadata, at most memberlist.MetaMaxSize bytes): the elector's term and
// unrecorded takeovers (table l2-member-meta), and the node's selected
// devices (table devices).
type nodeMeta struct {
	Term     string   `json:"t"`
	Devices  []string `json:"d,omitempty"`
	TookOver []string `json:"o,omitempty"`
}

// members runs this node's memberlist: the failure detector, the
// metadata, and the echoes that confirm this node is alive in its peers'
// view.
type members struct {
	log  *slog.Logger
	self string
	ml   atomic.Pointer[memberlist.Memberlist]

	mu       sync.Mutex
	meta     nodeMeta
	states   map[string]*tables.L2Member
	seq      uint64
	sent     map[uint64]time.Time
	echoedAt time.Time // send time of the latest answered echo request
	// echoedSince: send time of the first answered request of the
	// unbroken run that ends with echoedAt (each request of the run sent
	// before the confirmation of the one before it ran out).
	echoedSince time.Time
	version     uint64 // counts changes of states
	// changed wakes the loop that copies states and echoedAt into the
	// tables.
	changed chan struct{}
}

func newMembers(log *slog.Logger, self string) *members {
	return &members{log: log, self: self, states: map[string]*tables.L2Member{}, sent: map[uint64]time.Time{}, changed: make(chan struct{}, 1)}
}

// start binds the member port and starts the failure detector.
func (m *members) start(advertise netip.Addr, port int, secret []byte) error {
	c := memberlist.DefaultLANConfig()
	c.Name = m.self
	c.BindAddr = "0.0.0.0"
	if advertise.Is6() {
		c.BindAddr = "::"
	}
	c.BindPort, c.AdvertisePort = port, port
	c.AdvertiseAddr = advertise.String()
	c.ProbeInterval, c.ProbeTimeout = probeInterval, probeTimeout
	c.SuspicionMult, c.SuspicionMaxTimeoutMult = suspicionMult, suspicionMax
	c.GossipInterval = gossipInterval
	c.GossipToTheDeadTime = 10 * time.Second
	c.PushPullInterval = 10 * time.Second
	c.TCPTimeout = time.Second
	// The peer secret becomes the AES-256 key: every packet is encrypted
	// and authenticated, and packets without it are dropped.
	key := sha256.Sum256(secret)
	c.SecretKey = key[:]
	c.GossipVerifyIncoming, c.GossipVerifyOutgoing = true, true
	c.Delegate = m
	c.Events = m
	c.Logger = log.New(&memberlog.Writer{Log: m.log,
		SecretHint: "is the peer Secret (l2-announcements-peer-secret) the one this agent read at start? An agent reads it once: restart those that started before it was replaced"}, "", 0)
	ml, err := memberlist.Create(c)
	if err != nil {
		return fmt.Errorf("starting the member protocol on port %d: %w", port, err)
	}
	m.ml.Store(ml)
	return nil
}

// stop leaves the cluster, so the peers take over at once instead of after
// suspicion, then closes the port.
func (m *members) stop() {
	ml := m.ml.Load()
	if ml == nil {
		return
	}
	if err := ml.Leave(time.Second); err != nil {
		m.log.Warn("Leaving the member cluster failed", "error", err)
	}
	_ = ml.Shutdown()
}

// setMeta publishes new metadata to the peers, if it changed.
func (m *members) setMeta(meta nodeMeta) {
	m.mu.Lock()
	same := m.meta.Term == meta.Term && slices.Equal(m.meta.Devices, meta.Devices) && slices.Equal(m.meta.TookOver, meta.TookOver)
	m.meta = meta
	m.mu.Unlock()
	ml := m.ml.Load()
	if same || ml == nil {
		return
	}
	if err := ml.UpdateNode(time.Second); err != nil {
		m.log.Warn("Publishing member metadata failed", "error", err)
	}
}

// join asks the member port of each address to let this node in.
func (m *members) join(addrs []string) {
	ml := m.ml.Load()
	if len(addrs) == 0 || ml == nil {
		return
	}
	if n, err := ml.Join(addrs); err != nil && n == 0 {
		m.log.Debug("Joining peers failed", "peers", addrs, "error", err)
	}
}

// snapshot returns the members as rows, and a version that changes with
// them.
func (m *members) snapshot() ([]*tables.L2Member, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*tables.L2Member, 0, len(m.states))
	for _, s := range m.states {
		c := *s
		out = append(out, &c)
	}
	return out, m.version
}

func (m *members) wake() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// NodeMeta returns this node's metadata (memberlist.Delegate).
func (m *members) NodeMeta(limit int) []byte {
	m.mu.Lock()
	meta := m.meta
	m.mu.Unlock()
	b, _ := json.Marshal(meta)
	if len(b) > limit {
		meta.TookOver = []string{tables.L2TookMany}
		b, _ = json.Marshal(meta)
	}
	if len(b) > limit {
		meta.Devices = nil
		b, _ = json.Marshal(meta)
	}
	return b
}

func (m *members) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (m *members) LocalState(join bool) []byte                { return nil }
func (m *members) MergeRemoteState(buf []byte, join bool)     {}

// NotifyJoin, NotifyLeave and NotifyUpdate keep the member rows
// (memberlist.EventDelegate). The event says the state: the Node's State
// field is not kept current by memberlist.
func (m *members) NotifyJoin(n *memberlist.Node)   { m.record(n, tables.MemberAlive) }
func (m *members) NotifyLeave(n *memberlist.Node)  { m.record(n, tables.MemberDead) }
func (m *members) NotifyUpdate(n *memberlist.Node) { m.record(n, tables.MemberAlive) }

func (m *members) record(n *memberlist.Node, state string) {
	var meta nodeMeta
	if err := json.Unmarshal(n.Meta, &meta); err != nil && len(n.Meta) > 0 {
		m.log.Warn("Unreadable member metadata", "member", n.Name, "error", err)
	}
	addr, _ := netip.AddrFromSlice(n.Addr)
	m.mu.Lock()
	old := m.states[n.Name]
	row := &tables.L2Member{Node: n.Name, Addr: netip.AddrPortFrom(addr.Unmap(), n.Port), State: state, Since: time.Now(),
		Term: meta.Term, Devices: meta.Devices, TookOver: meta.TookOver, Self: n.Name == m.self}
	if old != nil && old.State == state {
		row.Since = old.Since
	}
	m.states[n.Name] = row
	m.version++
	m.mu.Unlock()
	if old == nil || old.State != state {
		m.log.Info("Member changed state", "member", n.Name, "state", state, "term", meta.Term)
	}
	m.wake()
}
