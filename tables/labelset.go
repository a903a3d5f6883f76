package tables

import (
	"encoding/json"
	"slices"
	"strings"
)

// LabelSet is an object's labels, sorted by key. The agent keeps the
// labels of every Service for as long as it exists: a slice of pairs is a
// tenth of a small map's memory. Selectors read them through Map.
type LabelSet []Label

// Label is one label.
type Label struct {
	Key, Value string
}

// LabelSetOf copies m into a LabelSet (nil when m is empty).
func LabelSetOf(m map[string]string) LabelSet {
	if len(m) == 0 {
		return nil
	}
	out := make(LabelSet, 0, len(m))
	for k, v := range m {
		out = append(out, Label{Key: k, Value: v})
	}
	slices.SortFunc(out, func(a, b Label) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Map returns the labels as a new map, with room for extra more entries.
func (l LabelSet) Map(extra int) map[string]string {
	m := make(map[string]string, len(l)+extra)
	for _, kv := range l {
		m[kv.Key] = kv.Value
	}
	return m
}

// MarshalJSON writes the labels as an object, as Kubernetes does.
func (l LabelSet) MarshalJSON() ([]byte, error) { return json.Marshal(l.Map(0)) }

// UnmarshalJSON reads an object of labels.
func (l *LabelSet) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*l = LabelSetOf(m)
	return nil
}
