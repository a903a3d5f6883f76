//go:build tools

// Package tools pins the reference CNI plugins the tests run herald-ipam
// with. install/dev/ensure-cni-plugins.sh builds them from here.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
)
