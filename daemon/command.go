package daemon

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
)

// NewAgentCommand returns the herald-agent command line.
func NewAgentCommand() *cobra.Command {
	h := New()
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
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("log-level: %w", err)
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			slog.SetDefault(log)
			return h.Run(log)
		},
	}
	cmd.Flags().StringVar(&configDir, "config-dir", "", "Directory with one file per option (a mounted ConfigMap); command-line flags take precedence")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "Log level: debug, info, warn or error")
	h.RegisterFlags(cmd.Flags())
	cmd.AddCommand(h.Command())
	return cmd
}
