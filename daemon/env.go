package daemon

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/dbgshell"
)

// applyEnv sets every option the command line and the configuration
// directory left alone from its environment variable (prefix + name), so
// that a bad value is refused naming the variable, and herald-dbg config
// shows what the agent runs with. The hive reads the same variables, below
// set flags: the order stays command line, ConfigMap, environment, default.
func applyEnv(flags *pflag.FlagSet, prefix string) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" || slices.Contains(dbgshell.LibraryFlags, f.Name) {
			return
		}
		env := prefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v, ok := os.LookupEnv(env)
		if !ok {
			return
		}
		if e := flags.Set(f.Name, v); e != nil {
			err = fmt.Errorf("%s: %w", env, e)
		}
	})
	return err
}
