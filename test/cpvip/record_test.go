package cpvip

import (
	"errors"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func TestAssignAndSpans(t *testing.T) {
	// Requests at capture positions 0, 2, 5 (sent at 0, 10, 20 ms).
	sent := []sentProbe{{0, ms(0)}, {2, ms(10)}, {5, ms(20)}}
	replies := []seqReply{
		{0, Reply{ms(1), "a"}},
		{1, Reply{ms(2), "a"}}, // a second frame from the same MAC: not a double
		{3, Reply{ms(11), "a"}},
		{4, Reply{ms(12), "b"}}, // double
		{6, Reply{ms(22), "b"}},
	}
	probes := assign(sent, replies)
	var answers []string
	for _, p := range probes {
		answers = append(answers, p.Answer())
	}
	if want := []string{"a", "a+b", "b"}; !slices.Equal(answers, want) {
		t.Fatalf("answers %v, want %v", answers, want)
	}
	ds := doubles(probes)
	if len(ds) != 1 || ds[0].Request != 2 || !slices.Equal(ds[0].MACs, []string{"a", "b"}) || !ds[0].At.Equal(ms(11)) {
		t.Fatalf("doubles %v", ds)
	}
	r := &VIPRecord{Probes: probes}
	spans := r.AnsweredBy()
	if len(spans) != 3 || spans[1].Answer != "a+b" || spans[2].Probes != 1 {
		t.Fatalf("spans %+v", spans)
	}
	if got := r.OwnerAt(ms(15)); got != "a+b" {
		t.Fatalf("OwnerAt(15ms) = %q", got)
	}
}

func TestAssignDropsRepliesBeforeFirstRequest(t *testing.T) {
	probes := assign([]sentProbe{{3, ms(0)}}, []seqReply{{1, Reply{ms(0), "x"}}, {3, Reply{ms(1), "y"}}})
	if got := probes[0].Answer(); got != "y" {
		t.Fatalf("answer %q, want y", got)
	}
}

func TestFailoverAndSilence(t *testing.T) {
	r := &VIPRecord{Probes: []Probe{
		{Sent: ms(0), Replies: []Reply{{ms(1), "a"}}},
		{Sent: ms(10), Replies: []Reply{{ms(11), "a"}}},
		{Sent: ms(20)},
		{Sent: ms(30)},
		{Sent: ms(40), Replies: []Reply{{ms(42), "b"}}},
	}}
	d, ok := r.Failover(ms(15), "a")
	if !ok || d != 27*time.Millisecond {
		t.Fatalf("Failover = %v, %v; want 27ms", d, ok)
	}
	if _, ok := r.Failover(ms(15), "b"); ok {
		t.Fatal("Failover from b found another MAC")
	}
	if got := r.LongestSilence(); got != 20*time.Millisecond {
		t.Fatalf("LongestSilence = %v, want 20ms", got)
	}
}

func TestAPIWindows(t *testing.T) {
	fail := errors.New("refused")
	r := &APIRecord{Requests: []APIRequest{
		{ms(0), ms(5), nil},
		{ms(50), ms(51), fail},
		{ms(100), ms(1100), fail},
		{ms(1100), ms(1110), nil},
		{ms(1150), ms(1160), fail},
	}}
	ws := r.Windows()
	if len(ws) != 2 {
		t.Fatalf("windows %v", ws)
	}
	if ws[0].Duration() != 1050*time.Millisecond || ws[0].Failures != 2 || ws[0].FirstErr != fail {
		t.Fatalf("first window %v", ws[0])
	}
	if ws[1].Duration() != 10*time.Millisecond {
		t.Fatalf("last window (no success after it) %v", ws[1])
	}
	if l := r.Longest(); !l.From.Equal(ms(50)) {
		t.Fatalf("longest %v", l)
	}
	if got := r.LongestWithoutAnswer(); got != 1105*time.Millisecond {
		t.Fatalf("LongestWithoutAnswer = %v, want 1.105s", got)
	}
	if r.Failed() != 3 {
		t.Fatalf("Failed = %d", r.Failed())
	}

	// An outage still going on when the loop stops counts up to its last
	// request; one with no answer at all from the first request.
	r.Requests = append(r.Requests, APIRequest{ms(1200), ms(3200), fail})
	if got := r.LongestWithoutAnswer(); got != 2090*time.Millisecond {
		t.Fatalf("LongestWithoutAnswer with an outage at the end = %v, want 2.09s", got)
	}
	r = &APIRecord{Requests: []APIRequest{{ms(10), ms(20), fail}, {ms(60), ms(2060), fail}}}
	if got := r.LongestWithoutAnswer(); got != 2050*time.Millisecond {
		t.Fatalf("LongestWithoutAnswer with no answer at all = %v, want 2.05s", got)
	}

	// A request still waiting when the loop stopped counts as unanswered,
	// not as failed.
	r = &APIRecord{Requests: []APIRequest{{ms(0), ms(5), nil}, {ms(50), ms(1500), ErrNoAnswerYet}}}
	if got := r.LongestWithoutAnswer(); got != 1495*time.Millisecond {
		t.Fatalf("LongestWithoutAnswer with a request waiting at the end = %v, want 1.495s", got)
	}
	if r.Failed() != 0 || len(r.Windows()) != 0 {
		t.Fatalf("Failed = %d, windows %v; want none: the request was not answered yet, not failed", r.Failed(), r.Windows())
	}
	if !r.AnsweredSince(ms(0)) || r.AnsweredSince(ms(1)) {
		t.Fatal("AnsweredSince: only the request started at 0 was answered")
	}
}
