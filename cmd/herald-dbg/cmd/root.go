// Package cmd implements herald-dbg's commands.
package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
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
	root.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig for what herald-dbg asks the API server itself (Lease holders; Pods, CiliumNodes and pools for ipam; migrate); default: $KUBECONFIG, ~/.kube/config, then the Pod's service account")
	root.AddCommand(statedbCmd(), configCmd(), explainCmd(), poolsCmd(), bpfCmd(), ipamCmd(), shellCmd(), migrateCmd())
	strictGroups(root)
	return root
}

// kubeClients connects to the API server as restConfig says: a kubeconfig,
// or as the Pod herald-dbg runs in (the agent's service account).
func kubeClients() (kubernetes.Interface, versioned.Interface, error) {
	cfg, err := restConfig()
	if err != nil {
		return nil, nil, err
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

// dynamicClient reaches objects herald-dbg has no Go types for (MetalLB's)
// and applies manifests untyped.
func dynamicClient() (dynamic.Interface, error) {
	cfg, err := restConfig()
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

// restConfig follows kubectl's rules: --kubeconfig, else $KUBECONFIG,
// else ~/.kube/config, else the Pod's service account. A user who runs
// herald-dbg migrate --apply next to kubectl reaches the same cluster as
// kubectl without repeating --kubeconfig; in a Pod none of the files exist.
func restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server (--kubeconfig, $KUBECONFIG, ~/.kube/config, or the Pod's service account): %w", err)
	}
	return cfg, nil
}
