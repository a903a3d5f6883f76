// Command herald-agent runs Herald on one node.
package main

import (
	"fmt"
	"os"

	"github.com/heraldlb/herald/daemon"
)

func main() {
	if err := daemon.NewAgentCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
