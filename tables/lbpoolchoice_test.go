package tables

import (
	"strings"
	"testing"
)

func TestParsePoolChoice(t *testing.T) {
	for _, c := range []struct {
		name        string
		annotations map[string]string
		want        PoolChoice
		wantErr     string
	}{
		{name: "none"},
		{name: "reserved", annotations: map[string]string{AnnotationPoolAutoAssign: "false"}, want: PoolChoice{Reserved: true}},
		{name: "auto-assign true", annotations: map[string]string{AnnotationPoolAutoAssign: " True "}},
		{name: "typo reserves", annotations: map[string]string{AnnotationPoolAutoAssign: "flase"}, want: PoolChoice{Reserved: true},
			wantErr: `annotation lbipam.herald.io/auto-assign: "flase" is not true or false`},
		{name: "priority", annotations: map[string]string{AnnotationPoolPriority: "10"}, want: PoolChoice{Priority: 10}},
		{name: "priority 0 is none", annotations: map[string]string{AnnotationPoolPriority: "0"}},
		{name: "bad priority", annotations: map[string]string{AnnotationPoolPriority: "high", AnnotationPoolAutoAssign: "false"}, want: PoolChoice{Reserved: true},
			wantErr: `annotation lbipam.herald.io/priority: "high" is not a priority`},
		{name: "negative priority", annotations: map[string]string{AnnotationPoolPriority: "-1"},
			wantErr: `"-1" is not a priority`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ParsePoolChoice(c.annotations)
			if !strings.Contains(got.Error, c.wantErr) || (c.wantErr == "") != (got.Error == "") {
				t.Errorf("error %q, want one with %q", got.Error, c.wantErr)
			}
			got.Error = ""
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestPoolChoiceBefore(t *testing.T) {
	p := func(n int) PoolChoice { return PoolChoice{Priority: n} }
	for _, c := range []struct {
		a, b PoolChoice
		want bool
	}{
		{p(1), p(2), true}, {p(2), p(1), false}, {p(1), p(1), false},
		{p(5), p(0), true}, {p(0), p(5), false}, {p(0), p(0), false},
	} {
		if got := c.a.Before(c.b); got != c.want {
			t.Errorf("%d before %d: %v, want %v", c.a.Priority, c.b.Priority, got, c.want)
		}
	}
}
