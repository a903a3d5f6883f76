package tables

import (
	"encoding/json"
	stdmaps "maps"
	"slices"
	"testing"
)

func TestLabelSet(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   map[string]string
		want LabelSet
		json string
	}{
		{"none", nil, nil, `{}`},
		{"empty", map[string]string{}, nil, `{}`},
		{"sorted by key", map[string]string{"tier": "web", "app": "x", "b": ""},
			LabelSet{{"app", "x"}, {"b", ""}, {"tier", "web"}}, `{"app":"x","b":"","tier":"web"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := LabelSetOf(tt.in)
			if !slices.Equal(l, tt.want) {
				t.Fatalf("LabelSetOf = %v, want %v", l, tt.want)
			}
			if m := l.Map(0); !stdmaps.Equal(m, tt.in) && len(m)+len(tt.in) > 0 {
				t.Errorf("Map = %v, want %v", m, tt.in)
			}
			b, err := json.Marshal(l)
			if err != nil || string(b) != tt.json {
				t.Fatalf("json %s, %v; want %s", b, err, tt.json)
			}
			var back LabelSet
			if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back, l) {
				t.Errorf("json round trip: %v, %v; want %v", back, err, l)
			}
		})
	}
}
