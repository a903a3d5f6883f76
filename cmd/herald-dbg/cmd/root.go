// Package cmd implements herald-dbg's commands.
package cmd

import (
	"context"
	"net"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/heraldlb/herald/cells/dbgapi"
)

var socket, kubeconfig string

// Root returns the herald-dbg command tree.
func Root() *cobra.Command {
	root := &cobra.Command{
		Use:           "herald-dbg",
		Short:         "Inspect the local herald-agent",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&socket, "socket", dbgapi.DefaultSocket, "The agent's debug socket (--dbg-socket of herald-agent)")
	root.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig for the few reads herald-dbg makes itself (Lease holders); default: the Pod's service account")
	root.AddCommand(statedbCmd(), configCmd(), explainCmd(), poolsCmd(), bpfCmd())
	return root
}

// agentTransport dials the agent's unix socket whatever the URL's host.
func agentTransport() *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}
}

var agentURL = &url.URL{Scheme: "http", Host: "herald-agent", Path: "/statedb"}
