package httpserve

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cilium/hive/cell"
)

func TestServesWhileTheHiveRuns(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ping", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "pong") })
	var addr net.Addr
	lc := &cell.DefaultLifecycle{}
	Serve(lc, slog.Default(), Endpoint{
		Addr: "127.0.0.1:0", Handler: mux, ReadHeaderTimeout: time.Second, Stopped: "test endpoint stopped",
		Listening: func(a net.Addr) { addr = a },
	})
	if err := lc.Start(slog.Default(), context.Background()); err != nil {
		t.Fatal(err)
	}
	url := "http://" + addr.String() + "/ping"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "pong" {
		t.Errorf("GET /ping: %q, want pong", body)
	}
	if err := lc.Stop(slog.Default(), context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("GET %s after the stop succeeded, want the endpoint closed", url)
	}
}

// A listen that fails fails the start, naming the flag when there is one.
func TestListenErrorNamesTheFlag(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct{ flag, prefix string }{
		{"health-serve-addr", "health-serve-addr " + taken.Addr().String() + ": "},
		{"", "listen tcp " + taken.Addr().String()},
	} {
		lc := &cell.DefaultLifecycle{}
		Serve(lc, slog.Default(), Endpoint{Addr: taken.Addr().String(), Handler: http.NewServeMux(), Flag: tc.flag})
		err := lc.Start(slog.Default(), context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.prefix) {
			t.Errorf("flag %q: start error %v, want one containing %q", tc.flag, err, tc.prefix)
		}
	}
}
