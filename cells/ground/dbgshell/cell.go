// Package dbgshell serves hive's shell on the agent's debug socket
// (--dbg-socket) for herald-dbg: statedb's commands (db/show, db/cmp, ...)
// over every registered table, and Herald's own, which print what
// herald-dbg shows:
//
//	herald/table [-o table|json] TABLE   any table, as `herald-dbg statedb TABLE`
//	herald/tables                        the names of the tables
//	herald/config                        the effective configuration, as JSON
//
// and the commands other cells register (herald/responder: the L2
// responder's pins, for `herald-dbg bpf responder`).
//
// Reads: every table; the effective configuration.
// Writes: nothing.
package dbgshell

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/shell"
	"github.com/spf13/pflag"
)

// DefaultSocket is where the agent listens and herald-dbg connects.
const DefaultSocket = "/var/run/herald/herald.sock"

// Config of the debug socket.
type Config struct {
	DbgSocket string // dbg-socket
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("dbg-socket", def.DbgSocket, "Unix socket the agent serves herald-dbg on (empty disables it)")
}

// LibraryFlags are flags hive's shell registers that are not Herald options:
// the shell listens on dbg-socket whatever they say. The agent's command
// hides them and refuses them on the command line and in the ConfigMap.
var LibraryFlags = []string{shell.ShellSockPathName}

// Cell serves the agent's shell on DefaultSocket unless told otherwise.
var Cell = NewCell(DefaultSocket)

// ControlPlaneSocket is where the control-plane VIP agent listens: it runs
// beside the agent on the same nodes.
const ControlPlaneSocket = "/var/run/herald/control-plane.sock"

// NewCell returns the shell with its socket's default.
func NewCell(socket string) cell.Cell {
	return cell.Module(
		"dbg-shell",
		"Shell for herald-dbg with every table and the configuration",

		cell.Config(Config{DbgSocket: socket}),
		cell.Provide(scriptCommands),
		// Before the shell's listener starts: its directory.
		cell.Invoke(prepareSocket),
		// hive's shell server, on dbg-socket.
		cell.Decorate(
			func(_ shell.Config, c Config) shell.Config { return shell.Config{ShellSockPath: c.DbgSocket} },
			shell.ServerCell(""),
		),
	)
}

// prepareSocket creates the socket's directory. The shell removes a socket
// left over by a previous run before it listens, and its listener removes
// the socket when it is closed at stop.
func prepareSocket(lc cell.Lifecycle, c Config) {
	if c.DbgSocket == "" {
		return
	}
	lc.Append(cell.Hook{OnStart: func(cell.HookContext) error {
		if err := os.MkdirAll(filepath.Dir(c.DbgSocket), 0o750); err != nil {
			return fmt.Errorf("dbg-socket: %w", err)
		}
		return nil
	}})
}
