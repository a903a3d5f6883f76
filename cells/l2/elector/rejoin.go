package elector

import (
	"time"

	"github.com/heraldlb/herald/tables"
)

// rejoinGrace is how long a node that starts a new term distrusts the
// deaths it saw before: enough for its failure detector to hear from the
// live ones again (a push-pull with any peer brings their states within
// milliseconds of a partition healing).
const rejoinGrace = time.Second

// deathTrusted reports whether this node may act on a member's death.
// Not while it saw the member die before its own current term began and
// that term is younger than rejoinGrace: a node cut off from the others
// (or frozen) sees every one of them die, and right after it is back its
// view still says so for a moment. Acting on it would take over groups a
// live node holds (cleanly: the holder hands them over, but they move for
// nothing). The nodes that saw the death while in good standing act on it
// at once; this one joins them after the grace.
func deathTrusted(m *tables.L2Member, termSince, now time.Time) bool {
	return m.Live() || !m.Since.Before(termSince) || now.Sub(termSince) >= rejoinGrace
}

// inRejoinGrace reports whether some member's death is not trusted yet.
func inRejoinGrace(rows []*tables.L2Member, termSince, now time.Time) bool {
	for _, m := range rows {
		if !deathTrusted(m, termSince, now) {
			return true
		}
	}
	return false
}
