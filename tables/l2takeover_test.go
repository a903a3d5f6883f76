package tables

import (
	"strings"
	"testing"
)

func TestL2TakeoverRoundTrip(t *testing.T) {
	in := &L2Takeover{From: "node2/ab12", Owners: map[string]string{"g1": "node1/t1", "g2": "node3/t3", "g3": "node1/t1"}}
	enc := in.Encode()
	if want := `{"from":"node2/ab12","owners":{"node1/t1":["g1","g3"],"node3/t3":["g2"]}}`; enc != want {
		t.Fatalf("Encode = %s, want %s", enc, want)
	}
	out := ParseL2Takeover(enc)
	if out == nil || out.From != in.From || len(out.Owners) != 3 || out.Owners["g2"] != "node3/t3" {
		t.Fatalf("ParseL2Takeover(%s) = %+v", enc, out)
	}
	for _, bad := range []string{"", "{", `{"owners":{}}`} {
		if ParseL2Takeover(bad) != nil {
			t.Errorf("ParseL2Takeover(%q) is not nil", bad)
		}
	}
}

func TestL2TakeoverLeaseName(t *testing.T) {
	if got := L2TakeoverLeaseName("node2", "ab12"); got != "herald-l2-takeover-node2-ab12" {
		t.Errorf("got %s", got)
	}
	long := strings.Repeat("n", 250)
	a, b := L2TakeoverLeaseName(long, "t1"), L2TakeoverLeaseName(long, "t2")
	if len(a) > 253 || a == b || !strings.HasPrefix(a, L2TakeoverLeasePrefix) {
		t.Errorf("long names: %s, %s", a, b)
	}
}
