package elector

import "slices"

// The terms this node saw its peers in. A Lease that names a live member
// in another term than the one the member's metadata shows is not
// necessarily stale: the term may be the member's next one, which its
// metadata has not brought yet (a node back from a freeze starts a new
// term and writes Leases in it a moment before the peers learn of it).
// Taking such a group would take it from a live holder. So a peer counts a
// live member's term as ended only once it saw the member in that term and
// then in another; for a term it never saw the member in, it waits, and
// the member itself, which knows its own terms, moves the group if it must.

// maxSeenTerms bounds the terms remembered per member. A Lease naming a
// term forgotten since (its holder restarted that often) counts as
// unknown: the peers wait, its holder moves it.
const maxSeenTerms = 16

// termsSeen is, per member, the terms this node saw it in, oldest first.
type termsSeen map[string][]string

// observe notes that node is in term now ("" before its first).
func (s termsSeen) observe(node, term string) {
	seen := s[node]
	if term == "" || slices.Contains(seen, term) {
		return
	}
	seen = append(seen, term)
	if len(seen) > maxSeenTerms {
		seen = slices.Delete(seen, 0, len(seen)-maxSeenTerms)
	}
	s[node] = seen
}

// keys are the seen terms as holder/term keys, for the view.
func (s termsSeen) keys() map[string]bool {
	out := map[string]bool{}
	for node, terms := range s {
		for _, t := range terms {
			out[node+"/"+t] = true
		}
	}
	return out
}
