// Command herald-ipam is Herald's CNI IPAM plugin: a main plugin such as
// bridge delegates to it, and it asks the herald agent on the node for the
// addresses. Everything is in package plugin.
package main

import (
	"os"

	"github.com/containernetworking/cni/pkg/skel"

	"github.com/heraldlb/herald/cmd/herald-ipam/plugin"
)

func main() {
	// Runtimes run CNI plugins without arguments (the verb is in
	// CNI_COMMAND); arguments come from a person or the DaemonSet's init
	// container: `herald-ipam install /host/opt/cni/bin`.
	if len(os.Args) > 1 {
		os.Exit(plugin.InstallMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	p := &plugin.Plugin{Stdout: os.Stdout, Stderr: os.Stderr}
	skel.PluginMainFuncs(p.Funcs(), plugin.Versions, plugin.About)
}
