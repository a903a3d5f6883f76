//go:build tools

// Package tools pins the Helm CLI that install/dev/ensure-tools.sh builds: the
// real-cluster tests (test/realcluster) install Herald with `helm install`, as
// users do. A module of its own, so that Helm's command and its dependency
// graph never enter Herald's build.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
