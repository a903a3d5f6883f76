package netlab

import (
	"net/netip"
	"testing"
)

func TestOverlapping(t *testing.T) {
	p := netip.MustParsePrefix
	taken := []deviceAddr{
		{"lo", p("127.0.0.1/8")},
		{"eth0", p("10.0.0.5/16")},
		{"hcp-root", p("198.18.40.1/24")},
		{"lo", p("::1/128")},
	}
	for _, tc := range []struct {
		subnet string
		want   string // the device, "" for none
	}{
		{"198.18.40.0/24", "hcp-root"},
		{"198.18.36.0/24", ""},
		{"198.18.0.0/15", "hcp-root"}, // a larger subnet holding it
		{"198.18.40.128/25", "hcp-root"},
		{"10.0.200.0/24", "eth0"},
		{"198.19.0.0/24", ""},
	} {
		d, ok := overlapping(p(tc.subnet), taken)
		if got := map[bool]string{true: d.dev}[ok]; got != tc.want {
			t.Errorf("overlapping(%s) = %q, want %q", tc.subnet, got, tc.want)
		}
	}
}
