package k8sreflect

import "testing"

func TestCompareResourceVersions(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"10", "9", 1}, // numeric, not lexical
		{"9", "10", -1},
		{"42", "42", 0},
		{"abc", "abc", 0},
		{"abc", "abd", -1}, // unordered: never counts as caught up
		{"abd", "abc", -1},
		{"", "5", -1},
	} {
		if got := compareResourceVersions(tt.a, tt.b); got != tt.want {
			t.Errorf("compare(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestBehind(t *testing.T) {
	listed := map[string]string{"ns/a": "100", "ns/b": "105"}
	const listRV = "110"
	for _, tt := range []struct {
		name string
		rows map[string]string
		want int
	}{
		{"same versions", map[string]string{"ns/a": "100", "ns/b": "105"}, 0},
		{"newer than the list", map[string]string{"ns/a": "120", "ns/b": "105"}, 0},
		{"created after the list", map[string]string{"ns/a": "100", "ns/b": "105", "ns/c": "111"}, 0},
		{"an old version", map[string]string{"ns/a": "99", "ns/b": "105"}, 1},
		{"missing", map[string]string{"ns/a": "100"}, 1},
		{"deleted before the list, still here", map[string]string{"ns/a": "100", "ns/b": "105", "ns/gone": "50"}, 1},
		{"empty table", map[string]string{}, 2},
		{"deleted after the list", map[string]string{"ns/a": "100"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			deleted := map[string]string{"ns/b": "106"}
			if tt.name != "deleted after the list" {
				deleted = nil
			}
			if n, _ := behind(tt.rows, listed, listRV, deleted); n != tt.want {
				t.Errorf("behind = %d, want %d", n, tt.want)
			}
		})
	}
}

func TestBehindDeletions(t *testing.T) {
	listed := map[string]string{"ns/a": "100"}
	for _, tt := range []struct {
		name    string
		deleted map[string]string
		want    int
	}{
		{"deletion after the listed version", map[string]string{"ns/a": "120"}, 0},
		{"deletion of an older incarnation", map[string]string{"ns/a": "90"}, 1},
		{"noticed by a relist after the list", map[string]string{"ns/a": ""}, 0},
		{"not deleted: not seen yet", nil, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if n, _ := behind(map[string]string{}, listed, "110", tt.deleted); n != tt.want {
				t.Errorf("behind = %d, want %d", n, tt.want)
			}
		})
	}
}
