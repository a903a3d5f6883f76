//go:build tools

// Package tools pins kube-apiserver v1.31.14, the oldest Kubernetes Herald
// supports. install/dev/ensure-tools.sh builds it from here so that the CRDs
// can be tested against the oldest API server as well as the current one
// (install/dev/tools).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
