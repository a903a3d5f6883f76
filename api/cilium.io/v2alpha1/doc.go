// Package v2alpha1 holds the Go types of Herald's cilium.io/v2alpha1 API:
// the CiliumLoadBalancerIPPool and CiliumL2AnnouncementPolicy CRDs,
// wire-compatible with Cilium's LB IPAM and L2 announcements, and the
// CiliumPodIPPool CRD of multi-pool pod IPAM, and the CRDs of the BGP control
// plane (CiliumBGPClusterConfig, CiliumBGPPeerConfig, CiliumBGPAdvertisement,
// CiliumBGPNodeConfigOverride, CiliumBGPNodeConfig) with Cilium 1.16's schema.
//
// The CRD YAML (install/crds/), the deep-copy functions and the typed
// clientset (api/client/) are generated from these types by hack/generate.sh.
// CiliumLoadBalancerIPPool's schema is also served as cilium.io/v2 (see
// hack/crd-versions).
//
// +k8s:deepcopy-gen=package
// +groupName=cilium.io
package v2alpha1
