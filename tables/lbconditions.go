package tables

// Condition types, reasons and messages LB IPAM writes; they are part of the
// API (users match on them in kubectl and alerting), so they never change.
const (
	// Service condition.
	ConditionRequestSatisfied = "io.cilium/lb-ipam-request-satisfied"

	ReasonSatisfied                = "satisfied"
	ReasonNoPool                   = "no_pool"
	ReasonOutOfIPs                 = "out_of_ips"
	ReasonPoolSelectorMismatch     = "pool_selector_mismatch"
	ReasonAlreadyAllocated         = "already_allocated"
	ReasonAlreadyAllocatedIncompat = "already_allocated_incompatible_service"
	ReasonInvalidRequest           = "invalid_request"
	ReasonFamilyDisabled           = "ip_family_disabled"
	MessageNoPool                  = "There are no enabled CiliumLoadBalancerIPPools that match this service"
	MessageOutOfIPs                = "All enabled CiliumLoadBalancerIPPools that match this service ran out of allocatable IPs"

	// Herald's addition: True (reason metallb_annotation_ignored) while a
	// MetalLB annotation says otherwise than the annotation for the same
	// thing that applies (Cilium's, or MetalLB's metallb.io/ spelling);
	// absent when they agree.
	ConditionAnnotationsDisagree   = "lbipam.herald.io/annotations-disagree"
	ReasonMetalLBAnnotationIgnored = "metallb_annotation_ignored"

	// Pool conditions.
	ConditionPoolConflict = "cilium.io/PoolConflict"
	ConditionIPsTotal     = "cilium.io/IPsTotal"
	ConditionIPsAvailable = "cilium.io/IPsAvailable"
	ConditionIPsUsed      = "cilium.io/IPsUsed"
	// Herald's additions, named like the L2 announcement policy's
	// conditions of the spec: True (reason error) while the pool has the
	// mistake, False (reason resolved) once it was fixed, absent on pools
	// that never had it.
	ConditionPoolBadServiceSelector = ConditionBadServiceSelector // io.cilium/bad-service-selector
	ConditionPoolBadBlocks          = "io.cilium/bad-blocks"
	// ConditionPoolBadAnnotations: Herald's pool choice annotations
	// (lbipam.herald.io/auto-assign, lbipam.herald.io/priority) do not
	// parse.
	ConditionPoolBadAnnotations = "lbipam.herald.io/bad-annotations"

	ReasonCIDROverlap = "cidr_overlap"
	ReasonResolved    = "resolved"
	ReasonNoReason    = "noreason"
)
