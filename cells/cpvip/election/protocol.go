package election

import (
	"slices"
	"time"
)

// The election's rules, pure: no clock, no network. The runner feeds them
// what it hears and the time, and does what they return.
//
// Every node is a voter and may be a candidate. A candidate asks for the
// VIP with a numbered request in every beat; a voter grants a request when
// the requester is the node it prefers and it has granted nobody else
// within the fence window. A request granted by a quorum (a majority of
// the configured nodes, the requester's own vote included) lets the
// requester answer until the fence window after it *sent* the request.
//
// Why no two nodes answer at once: two quorums share a voter. That voter
// granted the old owner's last counted request after it was sent, and the
// new owner's first request no sooner than the window after that grant;
// the new owner answers only once it holds that grant, so after the old
// owner's deadline (sent + window). A voter that starts (or restarts, and
// so forgot whom it granted) grants nothing for one window. Only a
// release shortens the wait: the owner publishes it after its responder
// confirmed the VIPs out of its maps, so it answers for nothing by then.
// A frozen or cut-off owner cannot release, and its eBPF responder falls
// silent at its deadline by itself.

// Rules are the constants of the protocol.
type Rules struct {
	Self   string
	Nodes  []string // every configured node, in rank order (ties go to the first)
	Window time.Duration
	// Live is how long a node counts as present after its last beat.
	Live time.Duration
}

// Quorum is the majority of the configured nodes.
func (r Rules) Quorum() int { return len(r.Nodes)/2 + 1 }

// Beat is what every node sends its peers on each tick.
type Beat struct {
	From string
	// Incarnation tells this run of the node from earlier ones: request
	// numbers start again at 1 when a node restarts.
	Incarnation int64
	Eligible    bool   // its API server is ready (and its VIPs are on a local subnet)
	Owning      bool   // it holds a granted deadline in the future
	Request     uint64 // the request it wants granted; 0: none
	Released    uint64 // it gave up every request up to this one
}

// Grant answers a request.
type Grant struct {
	From, To    string
	Incarnation int64 // the requester's
	Request     uint64
}

type peer struct {
	heard    time.Time
	beat     Beat
	released uint64
}

type sentRequest struct {
	at     time.Time
	grants map[string]bool
}

// State is one node's view and memory.
type State struct {
	Rules
	started time.Time
	peers   map[string]*peer

	eligible bool

	// As a voter: whom it granted last, when, and which request.
	grantee    string
	grantedAt  time.Time
	grantedReq uint64

	// As a candidate.
	seq      uint64
	sent     map[uint64]*sentRequest
	deadline time.Time
	released uint64
}

// New returns the state of a node that starts at now: it grants nothing
// for one window, since it may have granted another node just before it
// (re)started.
func New(r Rules, now time.Time) *State {
	return &State{Rules: r, started: now, peers: map[string]*peer{}, sent: map[uint64]*sentRequest{}}
}

// incarnation is this run's: when it started.
func (s *State) incarnation() int64 { return s.started.UnixNano() }

// SetEligible records whether this node may own the VIP.
func (s *State) SetEligible(ok bool) { s.eligible = ok }

// Deadline is until when this node may answer for the VIP (zero: not).
func (s *State) Deadline() time.Time { return s.deadline }

// Owning reports whether this node may answer at now.
func (s *State) Owning(now time.Time) bool { return now.Before(s.deadline) }

// Grantee is the node this voter granted last.
func (s *State) Grantee() string { return s.grantee }

func (s *State) rank(n string) int { return slices.Index(s.Nodes, n) }

func (s *State) live(n string, now time.Time) bool {
	if n == s.Self {
		return true
	}
	p := s.peers[n]
	return p != nil && now.Sub(p.heard) <= s.Live
}

func (s *State) eligibleNode(n string) bool {
	if n == s.Self {
		return s.eligible
	}
	return s.peers[n] != nil && s.peers[n].beat.Eligible
}

func (s *State) owningNode(n string, now time.Time) bool {
	if n == "" {
		return false
	}
	if n == s.Self {
		return s.Owning(now)
	}
	return s.peers[n] != nil && s.peers[n].beat.Owning
}

// Preferred is the node this one wants to own the VIP, "" for none. A
// node fits if it is present and eligible, or present while no present
// node is eligible. In this order:
//  1. the node this voter granted last, if it says it owns the VIP and
//     fits;
//  2. another node that says it owns it and fits, first in rank: an owner
//     is never displaced by an equal (no flapping);
//  3. while no present node is eligible, the node this voter granted
//     last: the last owner keeps the VIP while no API server is ready
//     anywhere, and gets it back if it let it go a moment before the
//     others noticed theirs were not ready either;
//  4. the first eligible present node in rank order. Every voter that
//     hears the same beats picks the same node, so votes do not split.
//
// Claims of ownership in beats are up to a beat old; 1 before 2 keeps a
// voter with the new owner while the old owner's last beat still claims.
func (s *State) Preferred(now time.Time) string {
	anyEligible := false
	for _, n := range s.Nodes {
		if s.live(n, now) && s.eligibleNode(n) {
			anyEligible = true
			break
		}
	}
	fit := func(n string) bool {
		return n != "" && s.live(n, now) && (s.eligibleNode(n) || !anyEligible)
	}
	if s.owningNode(s.grantee, now) && fit(s.grantee) {
		return s.grantee
	}
	for _, n := range s.Nodes {
		if s.owningNode(n, now) && fit(n) {
			return n
		}
	}
	if !anyEligible {
		if fit(s.grantee) {
			return s.grantee
		}
		return ""
	}
	for _, n := range s.Nodes {
		if s.live(n, now) && s.eligibleNode(n) {
			return n
		}
	}
	return ""
}

// releasedSince reports whether n gave up the request this voter granted
// it last, or a later one.
func (s *State) releasedSince(n string) bool {
	if n == s.Self {
		return s.released >= s.grantedReq && s.grantedReq > 0
	}
	p := s.peers[n]
	return p != nil && p.released >= s.grantedReq && s.grantedReq > 0
}

// mayGrant applies the voter's rule to request req of node n.
func (s *State) mayGrant(n string, req uint64, now time.Time) bool {
	if req == 0 || s.rank(n) < 0 || s.Preferred(now) != n {
		return false
	}
	if n != s.Self && req <= s.peers[n].released {
		return false // a request sent before its own release, arriving late
	}
	switch {
	case s.grantee == n:
		return true
	case now.Sub(s.started) < s.Window:
		return false // this voter may have granted another just before it started
	case s.grantee == "", now.Sub(s.grantedAt) >= s.Window, s.releasedSince(s.grantee):
		return true
	}
	return false
}

func (s *State) grant(n string, req uint64, now time.Time) {
	s.grantee, s.grantedAt, s.grantedReq = n, now, req
}

// Tick is this node's turn, once per beat interval: it returns the beat to
// send every peer. A node asks for the VIP while it prefers itself, and
// votes for its own request at once.
func (s *State) Tick(now time.Time) Beat {
	for seq, r := range s.sent {
		if now.Sub(r.at) > s.Window {
			delete(s.sent, seq)
		}
	}
	if s.Preferred(now) != s.Self {
		s.abandon()
		return s.beat(now)
	}
	b := s.beat(now)
	s.seq++
	b.Request = s.seq
	r := &sentRequest{at: now, grants: map[string]bool{}}
	s.sent[s.seq] = r
	if s.mayGrant(s.Self, s.seq, now) {
		s.grant(s.Self, s.seq, now)
		s.count(r, s.Self)
	}
	return b
}

// beat is what this node says of itself, without a request.
func (s *State) beat(now time.Time) Beat {
	return Beat{From: s.Self, Incarnation: s.incarnation(), Eligible: s.eligible, Owning: s.Owning(now), Released: s.released}
}

// OnBeat records a peer's beat and returns the grant to send back, if its
// request is granted.
func (s *State) OnBeat(b Beat, now time.Time) *Grant {
	if b.From == s.Self || s.rank(b.From) < 0 {
		return nil
	}
	p := s.peers[b.From]
	if p == nil {
		p = &peer{}
		s.peers[b.From] = p
	}
	if b.Incarnation != p.beat.Incarnation {
		p.released = 0 // a new run: its numbers start again
	}
	p.heard, p.beat = now, b
	p.released = max(p.released, b.Released)
	if b.Request == 0 || !s.mayGrant(b.From, b.Request, now) {
		return nil
	}
	s.grant(b.From, b.Request, now)
	return &Grant{From: s.Self, To: b.From, Incarnation: b.Incarnation, Request: b.Request}
}

// OnGrant counts a grant of one of this node's requests.
func (s *State) OnGrant(g Grant) {
	if g.To != s.Self || g.Incarnation != s.incarnation() || g.Request <= s.released || s.rank(g.From) < 0 {
		return
	}
	if r := s.sent[g.Request]; r != nil {
		s.count(r, g.From)
	}
}

func (s *State) count(r *sentRequest, from string) {
	r.grants[from] = true
	if len(r.grants) >= s.Quorum() {
		if d := r.at.Add(s.Window); d.After(s.deadline) {
			s.deadline = d
		}
	}
}

// abandon gives up the requests of a candidacy that won no quorum, once
// this node prefers another: it answers for nothing, so the voters that
// granted it (itself included) may grant the preferred node at once
// rather than a window later. Without it, two nodes that asked at once
// (one became eligible just as the other started a takeover) would each
// hold their own vote for a window.
func (s *State) abandon() {
	if s.deadline.IsZero() && len(s.sent) > 0 {
		s.Release()
	}
}

// Release gives up every request sent so far. The caller has made sure
// this node answers for none of the VIPs any more: a release lets the
// voters grant another node at once.
func (s *State) Release() {
	s.released = s.seq
	s.deadline = time.Time{}
	clear(s.sent)
}

// MustWithdraw reports whether this node holds the VIP (or a deadline for
// it) but prefers another node, or nobody: it must stop answering and
// release.
func (s *State) MustWithdraw(now time.Time) bool {
	return s.Owning(now) && s.Preferred(now) != s.Self
}

// PeerView is another node as this one hears it.
type PeerView struct {
	Name      string
	Present   bool
	Eligible  bool
	Owning    bool
	LastHeard time.Time
}

// Peers returns the other configured nodes, in rank order.
func (s *State) Peers(now time.Time) []PeerView {
	var out []PeerView
	for _, n := range s.Nodes {
		if n == s.Self {
			continue
		}
		v := PeerView{Name: n, Present: s.live(n, now)}
		if p := s.peers[n]; p != nil {
			v.Eligible, v.Owning, v.LastHeard = p.beat.Eligible, p.beat.Owning, p.heard
		}
		out = append(out, v)
	}
	return out
}

// Grants is how many voters granted this node's latest request, itself
// included.
func (s *State) Grants() int {
	if r := s.sent[s.seq]; r != nil {
		return len(r.grants)
	}
	return 0
}

// GrantedAt is when this voter granted its grantee last.
func (s *State) GrantedAt() time.Time { return s.grantedAt }
