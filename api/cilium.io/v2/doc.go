// Package v2 holds the Go types of Herald's cilium.io/v2 API: the part of
// Cilium's CiliumNode that multi-pool pod IPAM uses. The field and JSON names
// are Cilium's, so the pools part of a CiliumNode written for Cilium applies
// unchanged; the rest of Cilium's CiliumNode (addresses, health, encryption,
// cloud IPAM) is left out.
//
// The CRD YAML (install/crds/), the deep-copy functions and the typed
// clientset (api/client/) are generated from these types by hack/generate.sh.
//
// +k8s:deepcopy-gen=package
// +groupName=cilium.io
package v2
