package v2alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is the API group of every Cilium-compatible CRD.
	GroupName = "cilium.io"
	// Version is the version the Go types are registered (and stored) under.
	Version = "v2alpha1"

	// PoolKind, PoolPlural and PoolCRDName name the CiliumLoadBalancerIPPool
	// resource, e.g. for waiting on the CRD to become established.
	PoolKind    = "CiliumLoadBalancerIPPool"
	PoolPlural  = "ciliumloadbalancerippools"
	PoolCRDName = PoolPlural + "." + GroupName

	// PodIPPoolKind, PodIPPoolPlural and PodIPPoolCRDName name the
	// CiliumPodIPPool resource of multi-pool IPAM.
	PodIPPoolKind    = "CiliumPodIPPool"
	PodIPPoolPlural  = "ciliumpodippools"
	PodIPPoolCRDName = PodIPPoolPlural + "." + GroupName

	// The resources of the BGP control plane: kinds and plurals.
	BGPClusterConfigKind        = "CiliumBGPClusterConfig"
	BGPClusterConfigPlural      = "ciliumbgpclusterconfigs"
	BGPPeerConfigKind           = "CiliumBGPPeerConfig"
	BGPPeerConfigPlural         = "ciliumbgppeerconfigs"
	BGPAdvertisementKind        = "CiliumBGPAdvertisement"
	BGPAdvertisementPlural      = "ciliumbgpadvertisements"
	BGPNodeConfigOverrideKind   = "CiliumBGPNodeConfigOverride"
	BGPNodeConfigOverridePlural = "ciliumbgpnodeconfigoverrides"
	BGPNodeConfigKind           = "CiliumBGPNodeConfig"
	BGPNodeConfigPlural         = "ciliumbgpnodeconfigs"
)

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

// Kind takes an unqualified kind and returns a group-qualified GroupKind.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that add this group version to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this group version to a scheme; the generated
	// clientset calls it for its own scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&CiliumLoadBalancerIPPool{},
		&CiliumLoadBalancerIPPoolList{},
		&CiliumL2AnnouncementPolicy{},
		&CiliumL2AnnouncementPolicyList{},
		&CiliumPodIPPool{},
		&CiliumPodIPPoolList{},
		&CiliumBGPClusterConfig{},
		&CiliumBGPClusterConfigList{},
		&CiliumBGPPeerConfig{},
		&CiliumBGPPeerConfigList{},
		&CiliumBGPAdvertisement{},
		&CiliumBGPAdvertisementList{},
		&CiliumBGPNodeConfigOverride{},
		&CiliumBGPNodeConfigOverrideList{},
		&CiliumBGPNodeConfig{},
		&CiliumBGPNodeConfigList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
