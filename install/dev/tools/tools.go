//go:build tools

// Package tools pins the development tools built from this module.
// install/dev/ensure-tools.sh builds the control plane (kube-apiserver,
// kube-controller-manager, kube-scheduler), the node components (kubelet,
// kube-proxy) and kubectl from here.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
