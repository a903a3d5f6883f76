package statusstub

import (
	"context"
	"testing"
	"time"

	"github.com/cilium/statedb"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/tables"
)

// Standing is what a fenced status writer's test needs besides the stub:
// a database holding the leadership table (this agent's standing in the
// election, which the writer's fence reads right before each write, as in
// the cell) and an Event recorder.
type Standing struct {
	DB         *statedb.DB
	Leadership statedb.RWTable[*tables.Leadership]
	Events     *record.FakeRecorder
}

// NewStanding starts with l as this agent's standing (nil: no election
// yet).
func NewStanding(t testing.TB, l *tables.Leadership) *Standing {
	t.Helper()
	s := &Standing{DB: statedb.New(), Events: record.NewFakeRecorder(16)}
	var err error
	if s.Leadership, err = tables.NewLeadershipTable(s.DB); err != nil {
		t.Fatal(err)
	}
	if l != nil {
		s.Lead(l)
	}
	return s
}

// Lead sets this agent's standing.
func (s *Standing) Lead(l *tables.Leadership) {
	wtxn := s.DB.WriteTxn(s.Leadership)
	_, _, _ = s.Leadership.Insert(wtxn, l)
	wtxn.Commit()
}

// RecordedEvents drains the Events recorded so far.
func (s *Standing) RecordedEvents() []string {
	var out []string
	for {
		select {
		case e := <-s.Events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// WriteContext is the context a test hands a fenced write: canceled after
// a minute, so that a write the fence failed to bound ends the test with
// context.Canceled rather than hanging. It has no deadline of its own:
// the write's deadline is the fence's alone. Call end when done.
func WriteContext() (ctx context.Context, end func()) {
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(time.Minute, cancel)
	return ctx, func() {
		stop.Stop()
		cancel()
	}
}
