package elector

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Takeover records: one conditional write per dead holder and term, for
// all its groups, instead of one per group. See
// Documentation/l2-announcements.md, "Failover with many Services".
//
// The record of holder/term names, for each group whose Lease names that
// holder and term, the node (and its term) that holds it now. It is
// created, or grown, by a write conditional on the version read, so of
// two nodes with different views of the members only one places a
// group; an entry, once written, never changes. A node acts on a record
// only as its Lease table shows it, never on its own write's answer: the
// table is a prefix of the API server's history, so any state it acts on
// is one in which every group has exactly one holder.

// takeoverRecord is a takeover record as read.
type takeoverRecord struct {
	name, version string
	owners        map[string]string // group -> node/term
}

// recordWrite creates or grows the takeover record of a holder's term.
type recordWrite struct {
	from        string            // holder/term
	fromVersion string            // "" to create it
	owners      map[string]string // the whole record after the write
	added       int               // groups this write adds
}

// resolve is who holds each group: the holder its Lease names, or, when a
// takeover record of that holder and term lists the group, the node the
// record names, and so on along records of records (the new holder's term
// ended too before it wrote the Lease). A chain that comes back to a
// record it went through (two records written from views that each saw
// the other term still alive) names only ended terms: the group has no
// holder, and is taken by a write of its Lease.
func (v view) resolve() map[string]holding {
	out := make(map[string]holding, len(v.records))
	for g, h := range v.records {
		h, _ = v.chain(g, h)
		out[g] = h
	}
	return out
}

// chain follows the takeover records from h for group g; it returns the
// holding at its end and the records it went through.
func (v view) chain(g string, h holding) (holding, []string) {
	var through []string
	for h.holder != "" {
		t, ok := v.takeovers[h.key()]
		if !ok {
			break
		}
		o, ok := t.owners[g]
		if !ok {
			break
		}
		if slices.Contains(through, h.key()) {
			return holding{version: h.version, via: h.via}, through
		}
		through = append(through, h.key())
		node, term, _ := strings.Cut(o, "/")
		h.via, h.holder, h.term = h.key(), node, term
	}
	return h, through
}

// recordTakeover places a group taken from rec's holder and term with
// owner, in its current term, in that holder's takeover record. When it
// cannot, it says why ("" when placed).
func (v view) recordTakeover(p *plan, group string, rec holding, owner string) string {
	term := v.members[owner].term
	if owner == v.self {
		term = v.term
	}
	from := rec.key()
	to := owner + "/" + term
	// Never back to the term taken from, nor to another term that has
	// ended (it has a record): a member's term as this node sees it may
	// lag behind a restart.
	_, ended := v.takeovers[to]
	switch {
	case owner == "" || term == "":
		return fmt.Sprintf("not placed yet: the term of %s is not known", dashIfEmpty(owner))
	case to == from:
		return fmt.Sprintf("not placed yet: %s's term as this node sees it, %s, is the one it is taken from", owner, term)
	case ended:
		return fmt.Sprintf("not placed yet: %s's term %s has a takeover record", owner, term)
	}
	w, ok := p.records[from]
	if !ok {
		w = &recordWrite{from: from, owners: map[string]string{}}
		if cur, ok := v.takeovers[from]; ok {
			w.fromVersion = cur.version
			w.owners = maps.Clone(cur.owners)
		}
		p.records[from] = w
	}
	if _, ok := w.owners[group]; !ok {
		w.owners[group] = to
		w.added++
	}
	return ""
}

// unreferenced are the takeover records that no Lease needs any more:
// the chain of no announcement Lease goes through them (each group's new
// holder has written itself into its Lease). records are the Leases as
// read, not resolved.
func (v view) unreferenced() map[string]takeoverRecord {
	used := map[string]bool{}
	for g, h := range v.records {
		_, through := v.chain(g, h)
		for _, k := range through {
			used[k] = true
		}
		if h.holder != "" {
			used[h.key()] = true
		}
	}
	out := map[string]takeoverRecord{}
	for from, t := range v.takeovers {
		if !used[from] {
			out[from] = t
		}
	}
	return out
}
