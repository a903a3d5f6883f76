// Package pprof serves Go's runtime profiles (net/http/pprof) when --pprof is
// set, on --pprof-address:--pprof-port, as Cilium's agent does with the
// same flags: `go tool pprof http://localhost:6060/debug/pprof/profile`
// answers "where does the agent's CPU go?" on a live node.
//
// Reads: nothing. Writes: nothing; serves /debug/pprof/.
package pprof

import (
	"log/slog"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"strconv"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/internal/httpserve"
)

// Config of the profiling endpoint.
type Config struct {
	Pprof        bool   // pprof
	PprofAddress string // pprof-address
	PprofPort    uint16 // pprof-port
}

// Defaults: off; when on, loopback only, since profiles show the agent's
// memory.
var Defaults = Config{PprofAddress: "localhost", PprofPort: 6060}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.Bool("pprof", def.Pprof, "Serve Go runtime profiles at /debug/pprof/ on pprof-address:pprof-port")
	flags.String("pprof-address", def.PprofAddress, "Address the profiles are served on")
	flags.Uint16("pprof-port", def.PprofPort, "Port the profiles are served on")
}

var Cell = NewCell(Defaults)

// ControlPlaneDefaults are the control-plane VIP mode's: another port, so
// that it and the agent, on one node, can both serve their profiles.
var ControlPlaneDefaults = Config{PprofAddress: "localhost", PprofPort: 6061}

// NewCell serves the profiles with the given defaults.
func NewCell(def Config) cell.Cell {
	return cell.Module(
		"pprof",
		"Go runtime profiles over HTTP",

		cell.Config(def),
		cell.Invoke(serve),
	)
}

func serve(cfg Config, lc cell.Lifecycle, log *slog.Logger) {
	if !cfg.Pprof {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", httppprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", httppprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
	httpserve.Serve(lc, log, httpserve.Endpoint{
		Addr: net.JoinHostPort(cfg.PprofAddress, strconv.Itoa(int(cfg.PprofPort))), Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		Stopped: "pprof server stopped",
		Listening: func(a net.Addr) {
			log.Info("Serving Go runtime profiles", "address", "http://"+a.String()+"/debug/pprof/")
		},
	})
}
