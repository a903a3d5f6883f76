// Package scripthive runs a cell's txtar scenarios (cilium/hive's script
// tests, as statedb's reconciler/testdata): a hive of the infrastructure
// cells, the tables the scenario feeds and the cell under test, driven by
// the hive's script commands (hive/start, db/cmp, db/show, ...) and the
// scenario's own.
package scripthive

import (
	"context"
	"log/slog"
	"maps"
	"testing"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/job"
	"github.com/cilium/hive/script"
	"github.com/cilium/hive/script/scripttest"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
)

// Test runs testdata/*.txtar. feed provides the input tables and the
// scenario's commands; under is the cell under test, in a module that has a
// job group of its own, as in the agent. flags come before the scenario's
// own (the "#!" line of a txtar file).
func Test(t *testing.T, flags []string, feed cell.Cell, under cell.Cell) {
	scripttest.Test(t, context.Background(),
		func(t testing.TB, args []string) *script.Engine {
			h := hive.New(
				job.Cell,
				statedb.Cell,
				cell.SimpleHealthCell,
				agentconfig.Cell,
				feed,
				cell.Module("under-test", "The cell under test",
					cell.ProvidePrivate(func(r job.Registry, h cell.Health, l *slog.Logger) job.Group {
						return r.NewGroup(h, job.WithLogger(l))
					}),
					under,
				),
			)
			fs := pflag.NewFlagSet("", pflag.ContinueOnError)
			h.RegisterFlags(fs)
			if err := fs.Parse(append(append([]string{}, flags...), args...)); err != nil {
				t.Fatal(err)
			}
			log := hivetest.Logger(t, hivetest.LogLevel(slog.LevelWarn))
			cmds, err := h.ScriptCommands(log)
			if err != nil {
				t.Fatal(err)
			}
			maps.Insert(cmds, maps.All(script.DefaultCmds()))
			t.Cleanup(func() { _ = h.Stop(log, context.Background()) })
			return &script.Engine{Cmds: cmds}
		}, nil, "testdata/*.txtar")
}
