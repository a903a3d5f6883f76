package elector

import (
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/heraldlb/herald/tables"
)

// view is what one decision round knows: the candidates, the members as
// the failure detector sees them, the announcement Leases (records of who
// holds each group), and this node's own standing.
type view struct {
	self string
	// term is this node's current term, "" before the first one; fresh
	// says whether the fence allows answering now.
	term  string
	fresh bool
	// mayMove: this node may take groups over and hand them over; without
	// it (no majority on either side) it only keeps what it holds.
	mayMove bool
	// apiUp: Lease writes can be tried. When they cannot, groups of dead
	// nodes are still taken over, but nothing moves between live nodes.
	apiUp bool

	members map[string]member
	groups  []*tables.L2Candidate
	records map[string]holding // by group; missing: no Lease
	// takeovers are the takeover records, by the holder/term they take
	// groups from: a group whose Lease names that holder and term, and
	// that the record lists, is held by the node the record names.
	takeovers map[string]takeoverRecord
	// renewed are the groups whose Lease its holder renewed within its
	// duration (written again, same holder and term), which this election
	// never does: an agent of the Lease election holds them.
	renewed map[string]bool
	// took are the groups this node took over without recording it (the
	// API server was unreachable), with the record they replaced.
	took map[string]string
	// withdrawn are the groups this node hands over whose entries are out
	// of the responder: the handover can be recorded.
	withdrawn map[string]bool
	// seen are the terms (holder/term) this node saw its members in
	// (terms.go): of a live member, only those it saw it leave have ended.
	seen map[string]bool
}

// member is one agent as the failure detector sees it.
type member struct {
	live     bool
	term     string
	tookOver []string // claimKey()s of the records it answers for unrecorded
}

// holding is the announcement Lease of a group: who holds it, in which term.
type holding struct {
	holder, term string
	version      string // resourceVersion of the Lease, for conditional writes
	// via: the holder/term of the takeover record that names this holder
	// ("": the Lease names it).
	via string
	// transitions, acquired: the Lease's leaseTransitions and acquireTime.
	transitions int32
	acquired    time.Time
}

func (r holding) key() string { return r.holder + "/" + r.term }

// claimKey names, in a member's metadata, one group it took over from the
// record key without recording it: the record and a short hash of the
// group. The record alone would claim every group of a dead holder, and
// keep a second survivor from taking the others while the API server is
// away. A hash collision only makes another node wait.
func claimKey(group, record string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(group))
	return fmt.Sprintf("%s#%08x", record, h.Sum32())
}

// write is a change of a group's Lease: conditional on fromVersion ("" to
// create it).
type write struct {
	group, holder, term, fromVersion string
	why                              string
	// transitions, acquired: the leaseTransitions and acquireTime to
	// write (handedTo); a zero acquired is the time of the write.
	transitions int32
	acquired    time.Time
}

// decision is one group's outcome on this node, with the reason that
// herald-dbg shows.
type decision struct {
	owner    string // placement's choice among the live candidates
	announce bool   // this node answers for it
	withdraw bool   // this node hands it over: entries out first
	why      string
}

// plan is a decision round's outcome.
type plan struct {
	decisions map[string]decision
	writes    []write
	// records: the takeover records to write, by the holder/term they
	// take groups from.
	records map[string]*recordWrite
	took    map[string]string // the unrecorded takeovers after this round
	// holdings: who holds each group, the takeover records applied.
	holdings map[string]holding
}

// decide is the ownership protocol, pure: who answers for each group, and
// which Lease writes move or record ownership. The rules:
//
//   - The owner a group should have is a function of the live candidates
//     and the holders the Leases name (place): every agent that has read
//     the same Leases computes the same one.
//   - A node answers for a group only while it holds it: the group's Lease
//     names it in its current term, or it took the group over while the
//     API server was unreachable (and nobody recorded another holder
//     since). Holding is never inferred from memory alone.
//   - A group whose holder is dead, or whose Lease names a term its holder
//     no longer has, is taken over by the takeover record of that holder
//     and term: one record for all its groups, naming each one's owner,
//     written by whichever node gets there first, conditional on the
//     version read (two agents with different views cannot both win); a
//     record only grows. Every node obeys the record it reads, and the
//     new holder writes itself into the group's Lease afterwards (resolve,
//     takeover.go). A group without a holder is taken by its owner with a
//     conditional write of its Lease. With the API server unreachable, a
//     group is taken directly, announced to the peers as a takeover so
//     that no one else takes it from the same record.
//   - A live holder keeps a group until it hands it over: it withdraws
//     its entries first, then writes the new holder into the Lease; the
//     new owner answers when it reads that. Without the API server nothing
//     moves between live nodes.
//   - A Lease that its holder renews, which this election never does, is
//     held by an agent of the Lease election: it is not taken over until
//     the renewals stop for its duration.
//   - Nothing is answered, taken or handed over without a fresh fence.
func decide(v view) plan {
	v.records = v.resolve()
	owners := v.owners()
	claimed, claimsAll := v.claims()
	p := plan{decisions: map[string]decision{}, took: map[string]string{}, records: map[string]*recordWrite{}, holdings: v.records}
	for _, g := range v.groups {
		owner := owners[g.Group]
		rec, hasRec := v.records[g.Group]
		d := decision{owner: owner}
		mine := hasRec && v.term != "" && rec.holder == v.self && rec.term == v.term
		took, tookIt := v.took[g.Group]
		tookIt = tookIt && took == rec.key() && !mine
		if tookIt {
			p.took[g.Group] = took
		}
		candidate := slices.Contains(g.Nodes, v.self)
		switch {
		case !v.fresh:
			d.why = "not answering: this node's liveness is not confirmed"
		case mine || tookIt:
			v.held(&p, &d, g, rec, candidate, tookIt, took)
		default:
			v.notHeld(&p, &d, g, rec, hasRec, claimed, claimsAll)
		}
		p.decisions[g.Group] = d
	}
	// A record that would add nothing is not written.
	for from, r := range p.records {
		if r.added == 0 {
			delete(p.records, from)
		}
	}
	return p
}

// owners is placement's choice for every group, among its live
// candidates; a group stays with the holder its Lease names while that
// holder carries no more than its share.
func (v view) owners() map[string]string {
	live := map[string]bool{}
	for n, m := range v.members {
		if m.live {
			live[n] = true
		}
	}
	placeable := make([]Placeable, 0, len(v.groups))
	for _, g := range v.groups {
		var nodes []string
		for _, n := range g.Nodes {
			if live[n] {
				nodes = append(nodes, n)
			}
		}
		// The holder the Lease names, in the term it still has (or may
		// have: a term of it not seen yet): a group stays with it while
		// it carries no more than its share.
		holder := ""
		if rec, ok := v.records[g.Group]; ok && (v.inTerm(rec) || v.termUnknown(rec)) {
			holder = rec.holder
		}
		placeable = append(placeable, Placeable{Group: g.Group, Nodes: nodes, Holder: holder})
	}
	return place(placeable)
}

// claims are the records that some live member answers for without
// having recorded it, with the member; and the member, if any, that
// claims every record.
func (v view) claims() (claimed map[string]string, claimsAll string) {
	// Records that some live member answers for without having recorded
	// it: their groups are not free, whatever the Lease says. A member
	// whose list did not fit into its metadata claims every record.
	claimed = map[string]string{}
	for n, m := range v.members {
		if m.live && n != v.self {
			for _, k := range m.tookOver {
				claimed[k] = n
				if k == tookMany {
					claimsAll = n
				}
			}
		}
	}

	return claimed, claimsAll
}

// held decides a group this node holds (its Lease names this node's
// term, or it took the group over unrecorded): it goes on answering, or
// hands the group over, entries out first, then the Lease written.
func (v view) held(p *plan, d *decision, g *tables.L2Candidate, rec holding, candidate, tookIt bool, took string) {
	owner := d.owner
	switch {
	case !candidate || (owner != "" && owner != v.self):
		d.withdraw = true
		target, targetTerm := owner, ""
		if m, ok := v.members[owner]; ok {
			targetTerm = m.term
		}
		_, targetEnded := v.takeovers[target+"/"+targetTerm]
		switch {
		case !v.apiUp:
			// Keep answering: a handover needs the Lease.
			d.withdraw, d.announce = false, candidate
			d.why = fmt.Sprintf("held; would hand over to %s once the API server is reachable", dashIfEmpty(owner))
		case !v.mayMove:
			// Placement over a partial view: nothing moves.
			d.withdraw, d.announce = false, candidate
			d.why = "held; nothing moves while no majority of the nodes is alive in this node's view"
		case targetEnded:
			// This node's view of the owner's term lags behind: a
			// takeover record says that term ended.
			d.withdraw, d.announce = false, candidate
			d.why = fmt.Sprintf("held; would hand over to %s, whose term %s ended", target, targetTerm)
		case owner == "" || targetTerm == "":
			d.why = "released: this node may no longer announce it and no live node may"
			target, targetTerm = "", ""
			fallthrough
		default:
			if d.why == "" {
				d.why = fmt.Sprintf("handing over to %s (placement)", target)
			}
			if v.withdrawn[g.Group] {
				p.writes = append(p.writes, write{group: g.Group, holder: target, term: targetTerm, fromVersion: rec.version, why: d.why})
			}
		}
	default:
		d.announce = true
		d.why = "held by this node"
		switch {
		case tookIt && v.apiUp:
			p.writes = append(p.writes, write{group: g.Group, holder: v.self, term: v.term, fromVersion: rec.version,
				why: "recording the takeover of " + took})
		case rec.via != "":
			// Off the critical path: this node answers already, the
			// Lease catches up so that it tells the truth.
			d.why = "held by this node (takeover record of " + rec.via + ")"
			if v.apiUp {
				p.writes = append(p.writes, write{group: g.Group, holder: v.self, term: v.term, fromVersion: rec.version,
					why: "recording the takeover record of " + rec.via})
			}
		}
	}
}

// notHeld decides a group this node does not hold: it takes it when it is
// the owner and nobody else holds or claims it. A group taken from a
// holder goes into that holder's takeover record, with the groups of the
// other owners: whichever node writes the record first places them all.
func (v view) notHeld(p *plan, d *decision, g *tables.L2Candidate, rec holding, hasRec bool, claimed map[string]string, claimsAll string) {
	owner := d.owner
	if !v.mayMove {
		if hasRec && v.apiUp && rec.holder == v.self && rec.term != "" && slices.Contains(g.Nodes, v.self) {
			v.takeBack(p, d, g, rec, claimed, claimsAll)
			return
		}
		d.why = "not taking groups over: no majority of the nodes is alive in this node's view"
		return
	}
	wait := v.waitFor(g, rec, hasRec, claimed, claimsAll)
	fromHolder := hasRec && rec.holder != ""
	switch {
	case owner != v.self:
		d.why = fmt.Sprintf("owner %s", dashIfEmpty(owner))
		if fromHolder {
			d.why += ", held by " + rec.holder
			if wait == "" && v.apiUp {
				if why := v.recordTakeover(p, g.Group, rec, owner); why != "" {
					d.why += "; " + why
				}
			}
		}
	case wait != "":
		d.why = "owner this node; " + wait
	case v.apiUp && fromHolder:
		d.why = fmt.Sprintf("taking it over from %s (%s) by its takeover record", rec.key(), gone(v.members[rec.holder]))
		if why := v.recordTakeover(p, g.Group, rec, v.self); why != "" {
			d.why += "; " + why
		}
	case v.apiUp:
		d.why = "taking it (no holder)"
		p.writes = append(p.writes, write{group: g.Group, holder: v.self, term: v.term, fromVersion: rec.version, why: d.why})
	default:
		d.announce = true
		d.why = fmt.Sprintf("took it over from %s while the API server is unreachable", rec.key())
		p.took[g.Group] = rec.key()
	}
}

// takeBack keeps, in this node's current term, a group that its earlier
// term held, while nothing else may move (no majority on either side, or
// one of two nodes cut off from the other): by the takeover record of
// that term, as any takeover. Nobody else takes the group meanwhile (the
// standing that forbids moving says so), so without it a node whose own
// liveness lapsed for a moment would leave its groups unanswered for as
// long as the cut lasts. The record is written conditionally: should the
// other node have found this one gone and taken the group from the same
// term, only one of the two writes lands, and both obey it.
func (v view) takeBack(p *plan, d *decision, g *tables.L2Candidate, rec holding, claimed map[string]string, claimsAll string) {
	if wait := v.waitFor(g, rec, true, claimed, claimsAll); wait != "" {
		d.why = "held by an earlier term of this node; " + wait
		return
	}
	d.why = fmt.Sprintf("taking it back from %s, an earlier term of this node, by its takeover record", rec.key())
	if why := v.recordTakeover(p, g.Group, rec, v.self); why != "" {
		d.why += "; " + why
	}
}

// waitFor says why a group that this node would own may not be taken
// yet; "" when it is free.
func (v view) waitFor(g *tables.L2Candidate, rec holding, hasRec bool, claimed map[string]string, claimsAll string) string {
	switch {
	case !hasRec:
		return ""
	case v.inTerm(rec):
		return fmt.Sprintf("waiting for %s to hand it over", rec.holder)
	case v.termUnknown(rec):
		return fmt.Sprintf("waiting for %s: its Lease names term %s, which this node has not seen it in (its next term, or one before this agent started)", rec.holder, rec.term)
	case rec.holder != "" && v.renewed[g.Group]:
		// Taking it would start a fight with that agent's renewals
		// (see Documentation/l2-announcements.md, "Switching the
		// election"): it is left alone until it stops renewing.
		return fmt.Sprintf("%s renews the Lease (an agent of the Lease election?): not taken until it stops", rec.holder)
	case claimed[claimKey(g.Group, rec.key())] != "":
		return fmt.Sprintf("waiting for %s, which took it over from %s", claimed[claimKey(g.Group, rec.key())], rec.key())
	case claimed[rec.key()] != "":
		// An agent before per-group claims: it claims every group of
		// the record.
		return fmt.Sprintf("waiting for %s, which took over groups of %s", claimed[rec.key()], rec.key())
	case claimsAll != "":
		return fmt.Sprintf("waiting for %s, which took over more groups than it can list", claimsAll)
	}
	return ""
}

// inTerm reports whether a holding's node is alive in the term it names.
// A term that has a takeover record has ended, whatever this node's view
// of the members says: a term never resumes once left.
func (v view) inTerm(h holding) bool {
	m := v.members[h.holder]
	_, ended := v.takeovers[h.key()]
	return h.holder != "" && m.live && m.term == h.term && !ended
}

// termUnknown reports whether a holding names a live peer in a term that
// is neither the one its metadata shows nor one this node saw it leave
// (terms.go): it may be the peer's next term. Nothing takes it until that
// is known; the peer itself moves it if it must.
func (v view) termUnknown(h holding) bool {
	m := v.members[h.holder]
	_, ended := v.takeovers[h.key()]
	return h.holder != "" && h.holder != v.self && m.live && m.term != h.term && !ended && !v.seen[h.key()]
}

func gone(m member) string {
	if !m.live {
		return "dead"
	}
	return "its term ended"
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
