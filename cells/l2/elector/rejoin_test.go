package elector

import (
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

func TestDeathTrusted(t *testing.T) {
	termSince := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	before, after := termSince.Add(-3*time.Second), termSince.Add(200*time.Millisecond)
	tests := []struct {
		name  string
		state string
		since time.Time
		now   time.Time
		want  bool
	}{
		{"alive", tables.MemberAlive, before, termSince, true},
		{"died during this term", tables.MemberDead, after, after.Add(time.Millisecond), true},
		{"died before this term, term young", tables.MemberDead, before, termSince.Add(500 * time.Millisecond), false},
		{"died before this term, grace over", tables.MemberDead, before, termSince.Add(rejoinGrace), true},
		{"left before this term, term young", tables.MemberLeft, before, termSince, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &tables.L2Member{Node: "n", State: tt.state, Since: tt.since}
			if got := deathTrusted(m, termSince, tt.now); got != tt.want {
				t.Errorf("deathTrusted = %v, want %v", got, tt.want)
			}
			if got := inRejoinGrace([]*tables.L2Member{m}, termSince, tt.now); got != !tt.want {
				t.Errorf("inRejoinGrace = %v, want %v", got, !tt.want)
			}
		})
	}
}
