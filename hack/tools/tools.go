//go:build tools

// Package tools pins the code generators that hack/generate.sh builds.
// It lives in its own module so that the generators' dependency graph
// (controller-tools, code-generator, gengo) never enters Herald's go.mod.
package tools

import (
	_ "k8s.io/code-generator/cmd/client-gen"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
