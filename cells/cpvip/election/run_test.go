package election

import (
	"bytes"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
)

// A node missing from this node's --peers (a fourth control-plane node
// added to its own list only) is told apart from noise: this node never
// sends to it, so only this node can say that the two lists differ.
func TestReceiveFromNodeNotInPeers(t *testing.T) {
	var logs bytes.Buffer
	r := testRunner(&logs)
	stranger := []string{"cp1=198.18.0.1", "cp2=198.18.0.2", "cp3=198.18.0.3", "cp4=198.18.0.4"}
	for range 3 {
		r.receive(encode(wireMessage{Beat: &Beat{From: "cp4"}, VIPs: r.vips, Peers: stranger}), time.Now())
	}
	out := logs.String()
	if strings.Count(out, "configured differently") != 1 || !strings.Contains(out, "node=cp4") || !strings.Contains(out, "cp4=198.18.0.4") {
		t.Fatalf("want one error naming cp4 and both peer lists, got:\n%s", out)
	}
	if v := testutil.ToFloat64(r.m.mismatched); v != 1 {
		t.Fatalf("herald_control_plane_peer_config_mismatches = %v, want 1", v)
	}
}

// A node configured differently that is no longer heard (removed, or
// stopped) must not be counted for ever.
func TestMismatchForgotten(t *testing.T) {
	var logs bytes.Buffer
	r := testRunner(&logs)
	at := time.Now()
	r.receive(encode(wireMessage{Beat: &Beat{From: "cp2"}, VIPs: []string{"198.18.0.101"}, Peers: r.peers}), at)
	if v := testutil.ToFloat64(r.m.mismatched); v != 1 {
		t.Fatalf("herald_control_plane_peer_config_mismatches = %v, want 1", v)
	}
	r.forgetMismatches(at.Add(time.Second))
	if v := testutil.ToFloat64(r.m.mismatched); v != 1 {
		t.Fatalf("forgotten after a second: herald_control_plane_peer_config_mismatches = %v, want 1", v)
	}
	r.forgetMismatches(at.Add(10 * time.Second))
	if v := testutil.ToFloat64(r.m.mismatched); v != 0 || r.mismatched["cp2"] != "" {
		t.Fatalf("not heard for 10s: herald_control_plane_peer_config_mismatches = %v, want 0 (%v)", v, r.mismatched)
	}
}

func testRunner(logs io.Writer) *runner {
	cfg := cpvipconfig.Parsed{Self: "cp1", VIPs: []netip.Addr{netip.MustParseAddr("198.18.0.100")}}
	for i, n := range []string{"cp1", "cp2", "cp3"} {
		cfg.Peers = append(cfg.Peers, cpvipconfig.Peer{Name: n, Addr: netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)})})
	}
	r := &runner{params: params{Log: slog.New(slog.NewTextHandler(logs, nil))}, cfg: cfg, m: newMetrics(), mismatched: map[string]string{}, mismatchAt: map[string]time.Time{}}
	r.vips = []string{"198.18.0.100"}
	for _, q := range cfg.Peers {
		r.peers = append(r.peers, q.Name+"="+q.Addr.String())
	}
	r.st = New(Rules{Self: "cp1", Nodes: []string{"cp1", "cp2", "cp3"}, Window: 300 * time.Millisecond, Live: 300 * time.Millisecond}, time.Now())
	return r
}
