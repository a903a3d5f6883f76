// Go makes listeners MPTCP by default (Go 1.24), and MPTCP sockets refuse
// TCP_MD5SIG: GoBGP's listener (an instance's localPort) then ran without
// the peers' TCP-MD5 keys and accepted unsigned sessions from them.
//go:debug multipathtcp=0

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
