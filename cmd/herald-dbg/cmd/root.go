// Package cmd implements herald-dbg's commands.
package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/ground/dbgshell"
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
	root.PersistentFlags().StringVar(&socket, "socket", dbgshell.DefaultSocket, "The agent's debug socket (--dbg-socket of herald-agent)")
	root.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig for what herald-dbg asks the API server itself (Lease holders; Pods, CiliumNodes and pools for ipam); default: the Pod's service account")
	root.AddCommand(statedbCmd(), configCmd(), explainCmd(), poolsCmd(), bpfCmd(), ipamCmd(), shellCmd())
	return root
}

// kubeClients connects to the API server with --kubeconfig, or as the Pod
// herald-dbg runs in (the agent's service account).
func kubeClients() (kubernetes.Interface, versioned.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the API server (--kubeconfig, or the Pod's service account): %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	herald, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return kube, herald, nil
}
