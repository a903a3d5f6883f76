package l2elector

import "time"

// fence is this node's right to answer, as one unbroken stretch of
// confirmed liveness: a term. Evidence (a peer's echo, the node's own
// Lease renewal) says until when the node may answer; evidence arriving
// while the term runs extends it, evidence arriving after it ran out starts
// a new term, under a new name. Whatever the node held in the old term is
// void: meanwhile the others may have declared it dead and taken over.
type fence struct {
	term  string
	until time.Time
	// newTerm names a term; random, so that a restarted agent never
	// reuses the name of one of its earlier terms.
	newTerm func() string
}

// advance records evidence valid until until, at now. It reports whether a
// new term started.
func (f *fence) advance(now, until time.Time) bool {
	if !until.After(now) {
		return false // stale: it expired before it was read
	}
	if f.term != "" && f.until.After(now) {
		if until.After(f.until) {
			f.until = until
		}
		return false
	}
	f.term, f.until = f.newTerm(), until
	return true
}

// valid reports whether the node may answer at now.
func (f *fence) valid(now time.Time) bool { return f.term != "" && now.Before(f.until) }
