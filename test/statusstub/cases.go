package statusstub

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/heraldlb/herald/tables"
)

// FenceCase is one case that every fenced status writer passes: this
// agent's standing, the object's resourceVersion in the API server (the
// agent read it at 7), the term the status was computed in, and what must
// happen.
type FenceCase struct {
	Name       string
	Leadership *tables.Leadership
	ServerRV   int
	DecidedIn  uint64
	Sent       bool             // whether a request reaches the API server
	Err        func(error) bool // nil: the write succeeds
	Want       string           // the error's text contains
}

// FenceCases: a status reaches the API server only while the term of
// lease it was computed in is valid, and only as a write conditional on
// the resourceVersion it was computed from. object names the object in
// the cases' names ("pool", "Service").
func FenceCases(lease, object string) []FenceCase {
	leading := func(term uint64, validFor time.Duration) *tables.Leadership {
		return &tables.Leadership{Lease: lease, Identity: "node1_a", Holder: "node1_a",
			Leading: true, Term: term, ValidUntil: time.Now().Add(validFor)}
	}
	notLeader := func(err error) bool { return errors.Is(err, tables.ErrNotLeader) }
	return []FenceCase{
		{"term valid, " + object + " unchanged", leading(1, time.Hour), 7, 1, true, nil, ""},
		{"term lapsed: no renewal since the deadline", leading(1, -time.Second), 7, 1, false, notLeader, "term 1 lapsed at"},
		{"computed in term 1, term 2 began since", leading(2, time.Hour), 7, 1, false, notLeader, "in term 1 (now term 2)"},
		{"another agent leads", &tables.Leadership{Lease: lease, Identity: "node1_a", Holder: "node2_b"}, 7, 1, false,
			notLeader, "not the leader of " + lease},
		{"no election yet", nil, 7, 1, false, notLeader, "not the leader"},
		// A newer leader wrote the object since it was read: the API
		// server refuses the write; the reconciler retries it once the
		// table has the new version.
		{"term valid, " + object + " changed since it was read", leading(1, time.Hour), 8, 1, true,
			apierrors.IsConflict, "the object has been modified"},
	}
}

// Sent checks that one request reached the stub if sent, none otherwise,
// and returns it.
func (s *Server) Sent(t testing.TB, sent bool) (Request, bool) {
	t.Helper()
	reqs := s.Requests()
	switch {
	case !sent && len(reqs) > 0:
		t.Fatalf("%d requests reached the API server, want none: %+v", len(reqs), reqs)
	case sent && len(reqs) != 1:
		t.Fatalf("%d requests reached the API server, want 1", len(reqs))
	case sent:
		return reqs[0], true
	}
	return Request{}, false
}

// AbandonedAt waits for the held request to be abandoned (see Hold), which
// must not happen before valid, the end of the term it was sent in, and
// returns it.
func (s *Server) AbandonedAt(t testing.TB, valid time.Time) Request {
	t.Helper()
	select {
	case r := <-s.Abandoned():
		if time.Now().Before(valid) {
			t.Fatalf("request abandoned before the term's deadline %v", valid)
		}
		return r
	case <-time.After(time.Minute):
		t.Fatal("the API server still holds the request a minute after the deadline")
	}
	return Request{}
}
