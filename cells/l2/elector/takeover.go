package elector

import (
	"maps"
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
// record names, and so on along records of records (the new holder died
// too before writing the Lease).
func (v view) resolve() map[string]holding {
	out := make(map[string]holding, len(v.records))
	for g, h := range v.records {
		// A chain never revisits a record; the bound only guards against
		// records that name each other, which no agent writes.
		for range len(v.takeovers) {
			if h.holder == "" {
				break
			}
			t, ok := v.takeovers[h.key()]
			if !ok {
				break
			}
			o, ok := t.owners[g]
			if !ok {
				break
			}
			node, term, _ := strings.Cut(o, "/")
			h.via, h.holder, h.term = h.key(), node, term
		}
		out[g] = h
	}
	return out
}

// recordTakeover places a group taken from rec's holder and term with
// owner, in its current term, in that holder's takeover record.
func (v view) recordTakeover(p *plan, group string, rec holding, owner string) {
	term := v.members[owner].term
	if owner == v.self {
		term = v.term
	}
	if owner == "" || term == "" {
		return
	}
	from := rec.key()
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
		w.owners[group] = owner + "/" + term
		w.added++
	}
}

// unreferenced are the takeover records that no Lease needs any more:
// no announcement Lease names their holder and term (each group's new
// holder has written itself into its Lease), and no record places a group
// with it. records are the Leases as read, not resolved.
func unreferenced(records map[string]holding, takeovers map[string]takeoverRecord) map[string]takeoverRecord {
	used := map[string]bool{}
	for _, h := range records {
		if h.holder != "" {
			used[h.key()] = true
		}
	}
	for _, t := range takeovers {
		for _, o := range t.owners {
			used[o] = true
		}
	}
	out := map[string]takeoverRecord{}
	for from, t := range takeovers {
		if !used[from] {
			out[from] = t
		}
	}
	return out
}
