// Command herald-dbg inspects a running herald-agent on the same node.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/heraldlb/herald/cmd/herald-dbg/cmd"
)

func main() {
	if err := cmd.Root().ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
