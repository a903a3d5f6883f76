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

	// Pool conditions.
	ConditionPoolConflict = "cilium.io/PoolConflict"
	ConditionIPsTotal     = "cilium.io/IPsTotal"
	ConditionIPsAvailable = "cilium.io/IPsAvailable"
	ConditionIPsUsed      = "cilium.io/IPsUsed"

	ReasonCIDROverlap = "cidr_overlap"
	ReasonResolved    = "resolved"
	ReasonNoReason    = "noreason"
)
