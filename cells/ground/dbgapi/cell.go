// Package dbgapi serves the agent's statedb tables on a local unix socket
// for herald-dbg (`herald-dbg statedb <table>`), and the agent's effective
// configuration (`herald-dbg config`).
//
// Reads: every table, through statedb's HTTP handler.
// Writes: nothing.
package dbgapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
)

// DefaultSocket is where the agent listens and herald-dbg connects.
const DefaultSocket = "/var/run/herald/herald.sock"

// Config of the debug API.
type Config struct {
	DbgSocket string // dbg-socket
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("dbg-socket", def.DbgSocket, "Unix socket the agent serves herald-dbg on (empty disables it)")
}

var Cell = cell.Module(
	"dbg-api",
	"Serves tables to herald-dbg",

	cell.Config(Config{DbgSocket: DefaultSocket}),
	cell.Invoke(serve),
)

type params struct {
	cell.In

	Lifecycle cell.Lifecycle
	Config    Config
	DB        *statedb.DB
	Log       *slog.Logger
	Effective *agentconfig.Effective `optional:"true"`
}

func serve(p params) {
	cfg, log := p.Config, p.Log
	if cfg.DbgSocket == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/statedb/", http.StripPrefix("/statedb", p.DB.HTTPHandler()))
	mux.HandleFunc("/config", func(w http.ResponseWriter, _ *http.Request) {
		values := map[string]string{}
		if p.Effective != nil {
			values = p.Effective.Values()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(values)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	p.Lifecycle.Append(cell.Hook{
		OnStart: func(cell.HookContext) error {
			if err := os.MkdirAll(filepath.Dir(cfg.DbgSocket), 0o750); err != nil {
				return fmt.Errorf("dbg-socket: %w", err)
			}
			_ = os.Remove(cfg.DbgSocket) // left over by a previous run
			l, err := net.Listen("unix", cfg.DbgSocket)
			if err != nil {
				return fmt.Errorf("dbg-socket %s: %w", cfg.DbgSocket, err)
			}
			go func() {
				if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("Debug API stopped", "socket", cfg.DbgSocket, "error", err)
				}
			}()
			return nil
		},
		OnStop: func(ctx cell.HookContext) error {
			err := srv.Shutdown(context.Context(ctx))
			_ = os.Remove(cfg.DbgSocket)
			return err
		},
	})
}
