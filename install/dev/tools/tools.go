//go:build tools

// Package tools pins the development tools built from this module.
// install/dev/ensure-tools.sh builds kube-apiserver and kube-proxy from here.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
)
