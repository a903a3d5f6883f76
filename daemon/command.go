package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/ground/binarypages"
	"github.com/heraldlb/herald/cells/ground/dbgshell"
)

// NewAgentCommand returns the herald-agent command line.
func NewAgentCommand() *cobra.Command {
	effective := &agentconfig.Effective{}
	h := New(cell.Provide(func() *agentconfig.Effective { return effective }))
	var configDir, logLevel string
	cmd := &cobra.Command{
		Use:           "herald-agent",
		Short:         "Herald: LoadBalancer IPs for bare-metal Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          run(h, effective, &configDir, &logLevel, EnvPrefix, true),
	}
	registerFlags(cmd, h, &configDir, &logLevel, "Directory with one file per option (a mounted ConfigMap); command-line flags take precedence")
	cmd.AddCommand(h.Command(), newControlPlaneCommand())
	return cmd
}

// registerFlags adds the hive's options and the command's own to cmd.
func registerFlags(cmd *cobra.Command, h *hive.Hive, configDir, logLevel *string, configDirHelp string) {
	cmd.Flags().StringVar(configDir, "config-dir", "", configDirHelp)
	cmd.Flags().StringVar(logLevel, "log-level", "info", "Log level: debug, info, warn or error")
	h.RegisterFlags(cmd.Flags())
	// Flags a library cell registers that are no Herald option (hive's
	// shell's socket, which is dbg-socket): not in --help, refused on the
	// command line and in the ConfigMap, not in herald-dbg config.
	for _, name := range dbgshell.LibraryFlags {
		_ = cmd.Flags().MarkHidden(name)
	}
}

// run applies the configuration directory and the environment (variables
// envPrefix + name), records the effective options, sets up the log and
// runs the hive. withKlog sends client-go's logs (leader election,
// throttling) to the same log.
func run(h *hive.Hive, effective *agentconfig.Effective, configDir, logLevel *string, envPrefix string, withKlog bool) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := refuseLibraryFlags(cmd.Flags(), envPrefix); err != nil {
			return err
		}
		if *configDir != "" {
			if err := ApplyConfigDir(cmd.Flags(), *configDir); err != nil {
				return err
			}
		}
		if err := applyEnv(cmd.Flags(), envPrefix); err != nil {
			return err
		}
		effective.Set(optionValues(cmd.Flags()))
		var level slog.Level
		if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
			return fmt.Errorf("log-level: %w", err)
		}
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
		slog.SetDefault(log)
		if withKlog {
			klog.SetSlogLogger(log)
		}
		releaseInitPages(cmd.Flags())
		return h.Run(log)
	}
}

// optionValues returns the value of every option, by flag name: every flag
// but help and the library flags that are no option.
func optionValues(flags *pflag.FlagSet) map[string]string {
	values := map[string]string{}
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !slices.Contains(dbgshell.LibraryFlags, f.Name) {
			values[f.Name] = f.Value.String()
		}
	})
	return values
}

// refuseLibraryFlags fails when a library flag that is no option was given,
// on the command line or in the environment: it would do nothing.
func refuseLibraryFlags(flags *pflag.FlagSet, envPrefix string) error {
	for _, name := range dbgshell.LibraryFlags {
		if flags.Changed(name) {
			return fmt.Errorf("unknown flag: --%s", name)
		}
		env := envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if _, ok := os.LookupEnv(env); ok {
			return fmt.Errorf("unknown option %s", env)
		}
	}
	return nil
}

// releaseInitPages gives back, before the hive is built, the binary's pages
// that only the packages' initialisation needed, when release-startup-pages
// is on, so that they are not resident still while the cells start: the
// agent's peak then stays lower too. The binarypages cell releases again
// once the cells have started, and logs what it did or why it could not.
func releaseInitPages(flags *pflag.FlagSet) {
	f := flags.Lookup(binarypages.Flag)
	if f == nil || f.Value.String() != "true" {
		return
	}
	_, _ = binarypages.Release()
}
