package backends

import "testing"

func TestServedBy(t *testing.T) {
	for _, c := range []struct {
		answer string
		node   string
		ok     bool
	}{
		{"pod-node1: 198.18.11.2:8080 from 198.18.0.100:40000", "node1", true},
		{"pod-node2: [fd00:18:0:12::2]:8080 from [fd00:18::100]:40000", "node2", true},
		{"curl: (28) Connection timed out after 1001 milliseconds", "", false},
		{"pod-: x", "", false},
		{"pod-node1", "", false},
		{"", "", false},
	} {
		node, ok := ServedBy(c.answer)
		if node != c.node || ok != c.ok {
			t.Errorf("ServedBy(%q) = %q, %v, want %q, %v", c.answer, node, ok, c.node, c.ok)
		}
	}
}
