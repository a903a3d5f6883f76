package cpvip

import (
	"errors"
	"testing"
	"time"
)

var errTest = errors.New("connection refused")

// TestBenchSummarize checks how the benchmark reads one trial: the
// failover, the doubles and whether they lasted to the end of the watch.
func TestBenchSummarize(t *testing.T) {
	probe := func(at int, macs ...string) Probe {
		p := Probe{Sent: ms(at)}
		for _, m := range macs {
			p.Replies = append(p.Replies, Reply{ms(at + 1), m})
		}
		return p
	}
	api := &APIRecord{Requests: []APIRequest{
		{Start: ms(0), End: ms(5)},
		{Start: ms(10), End: ms(2000), Err: errTest},
		{Start: ms(2010), End: ms(2020)},
	}}
	for _, tc := range []struct {
		name   string
		probes []Probe
		want   trialResult
	}{{
		name:   "a clean takeover",
		probes: []Probe{probe(0, "a"), probe(10), probe(20, "b"), probe(30, "b")},
		want:   trialResult{failover: 16 * time.Millisecond, tookOver: true},
	}, {
		name:   "the old owner goes on answering",
		probes: []Probe{probe(0, "a"), probe(10, "a"), probe(20, "a", "b"), probe(30, "a", "b"), probe(40)},
		want: trialResult{failover: 16 * time.Millisecond, tookOver: true, doubles: 2,
			doubledFor: 20 * time.Millisecond, doubledAtEnd: true},
	}, {
		name:   "doubles that end",
		probes: []Probe{probe(0, "a"), probe(10, "b", "a"), probe(20, "b")},
		want:   trialResult{failover: 6 * time.Millisecond, tookOver: true, doubles: 1, doubledFor: 10 * time.Millisecond},
	}, {
		name:   "too late",
		probes: []Probe{probe(0, "a"), probe(10), probe(10006, "b")},
		want:   trialResult{},
	}, {
		name:   "nobody took over",
		probes: []Probe{probe(0, "a"), probe(10), probe(20)},
		want:   trialResult{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &VIPRecord{Every: 10 * time.Millisecond, Probes: tc.probes}
			rec.Doubles = doubles(rec.Probes)
			tc.want.apiLongest, tc.want.apiFailed = 2015*time.Millisecond, 1
			if got := summarize(rec, api, ms(5), "a"); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
