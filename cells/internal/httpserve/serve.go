// Package httpserve serves an HTTP endpoint of the agent (health, metrics,
// profiles) on a TCP address for as long as the hive runs.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/cilium/hive/cell"
)

// Endpoint is one HTTP endpoint of the agent.
type Endpoint struct {
	Addr    string
	Handler http.Handler
	// ReadHeaderTimeout bounds how long a client may take to send its
	// request's headers, so that slow clients cannot pile up connections.
	ReadHeaderTimeout time.Duration
	// Flag, when set, names the flag Addr came from in the error of a
	// failed listen, so that the user knows which setting to fix.
	Flag string
	// Stopped is the log message when serving fails after the start.
	Stopped string
	// Listening, when set, is called with the address listened on.
	Listening func(net.Addr)
}

// Serve listens on e.Addr when the hive starts (a failure fails the
// start), serves e.Handler until it stops, and shuts the server down then.
func Serve(lc cell.Lifecycle, log *slog.Logger, e Endpoint) {
	srv := &http.Server{Handler: e.Handler, ReadHeaderTimeout: e.ReadHeaderTimeout}
	lc.Append(cell.Hook{
		OnStart: func(cell.HookContext) error {
			l, err := net.Listen("tcp", e.Addr)
			if err != nil {
				if e.Flag != "" {
					return fmt.Errorf("%s %s: %w", e.Flag, e.Addr, err)
				}
				return err
			}
			if e.Listening != nil {
				e.Listening(l.Addr())
			}
			go func() {
				if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error(e.Stopped, "error", err)
				}
			}()
			return nil
		},
		OnStop: func(ctx cell.HookContext) error { return srv.Shutdown(context.Context(ctx)) },
	})
}
