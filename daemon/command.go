package daemon

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/cilium/hive/cell"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configDir != "" {
				if err := ApplyConfigDir(cmd.Flags(), configDir); err != nil {
					return err
				}
			}
			values := map[string]string{}
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Name != "help" {
					values[f.Name] = f.Value.String()
				}
			})
			effective.Set(values)
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("log-level: %w", err)
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			slog.SetDefault(log)
			// client-go logs (leader election, throttling) through klog: send
			// them to the same structured log.
			klog.SetSlogLogger(log)
			return h.Run(log)
		},
	}
	cmd.Flags().StringVar(&configDir, "config-dir", "", "Directory with one file per option (a mounted ConfigMap); command-line flags take precedence")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "Log level: debug, info, warn or error")
	h.RegisterFlags(cmd.Flags())
	cmd.AddCommand(h.Command())
	return cmd
}
