package nodeipam

import (
	"testing"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

// TestRefusal: each reason the allocator gives for not adding a CIDR has
// its own CNI code and Pod Event (the table in Documentation/multi-pool.md).
func TestRefusal(t *testing.T) {
	for _, tt := range []struct {
		cause  tables.ShortfallCause
		code   uint
		reason string
	}{
		{tables.ShortfallExhausted, ipamv1.CodePoolExhausted, "IPPoolExhausted"},
		{tables.ShortfallConflict, ipamv1.CodePoolConflict, "IPPoolConflict"},
		{tables.ShortfallDeleting, ipamv1.CodePoolDeleting, "IPPoolDeleting"},
		{tables.ShortfallMaskSize, 105, "IPPoolMaskSizeUnusable"},
		// A demand larger than a node may hold of a pool: the node gets
		// no more of it, as if it were exhausted.
		{tables.ShortfallTooLarge, ipamv1.CodePoolExhausted, "IPPoolExhausted"},
	} {
		if code, reason := refusal(tt.cause); code != tt.code || reason != tt.reason {
			t.Errorf("%s: code %d, Event %s; want %d, %s", tt.cause, code, reason, tt.code, tt.reason)
		}
	}
}
