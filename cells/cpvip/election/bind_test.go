package election

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
	"github.com/heraldlb/herald/test/logbuf"
)

// The election's port taken (or this node's address in --peers not yet
// on the node, as at boot before DHCP) must not end the election for
// good while the agent runs on: it says so, counts it, and binds once it
// can.
func TestTransportBindRetried(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := taken.Addr().(*net.TCPAddr).Port
	var logs logbuf.Buffer
	r := testRunner(&logs)
	r.cfg.Addr = netip.MustParseAddr("127.0.0.1")
	r.Config = cpvipconfig.Defaults
	r.Config.PeerPort = port
	r.secret = []byte("0123456789abcdef")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bound := make(chan *transport, 1)
	go func() {
		bound <- r.bindTransport(ctx, nopHealth{})
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if testutil.ToFloat64(r.m.configErrors.WithLabelValues("transport")) == 1 &&
			strings.Contains(logs.String(), "127.0.0.1:"+strconv.Itoa(port)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("want the failure logged, naming 127.0.0.1:%d, and herald_control_plane_candidacy_errors{kind=\"transport\"} 1:\n%s", port, logs.String())
		}
	}
	if strings.Count(logs.String(), "level=ERROR") != 1 {
		t.Fatalf("want the failure logged once while it lasts:\n%s", logs.String())
	}
	taken.Close()
	select {
	case tr := <-bound:
		if tr == nil {
			t.Fatalf("no transport once the port is free:\n%s", logs.String())
		}
		tr.stop()
	case <-time.After(time.Minute):
		t.Fatalf("the election never bound once the port was free:\n%s", logs.String())
	}
	if v := testutil.ToFloat64(r.m.configErrors.WithLabelValues("transport")); v != 0 {
		t.Fatalf(`herald_control_plane_candidacy_errors{kind="transport"} = %v once bound, want 0`, v)
	}
}

// nopHealth takes the election's health reports and drops them.
type nopHealth struct{ cell.Health }

func (nopHealth) OK(string)              {}
func (nopHealth) Degraded(string, error) {}
