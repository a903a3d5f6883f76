package multipool

import (
	"context"
	"errors"
	"testing"

	cnitypes "github.com/containernetworking/cni/pkg/types"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/cells/podipam/nodeipam"
	"github.com/heraldlb/herald/tables"
)

// TestPoolAnnotationValues: through the runtime and bridge, a pool
// annotation whose value cannot be a pool's name fails the ADD with CNI
// error 102 and an Event naming the value, and a blank one counts as
// none: the namespace's annotation decides.
func TestPoolAnnotationValues(t *testing.T) {
	logAgentsOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ns := namespace(t, "annvalues", map[string]string{tables.AnnotationIPPool: "green-pool"})

	bad := newPod(t, nodes[0], ns, "bad", map[string]string{tables.AnnotationIPPool: "Bad_Name!"})
	defer bad.stop(t)
	var cniErr *cnitypes.Error
	if err := bad.add(ctx); !errors.As(err, &cniErr) || cniErr.Code != ipamv1.CodeBadAnnotation {
		t.Fatalf("ADD = %v, want CNI error %d", err, ipamv1.CodeBadAnnotation)
	}
	waitEvent(t, ns, "Pod", "bad", nodeipam.EventBadAnnotation, "Bad_Name!")

	blank := startPod(t, nodes[0], ns, "blank", map[string]string{tables.AnnotationIPPool: "  "})
	defer blank.stop(t)
	if ips := blank.IPs(); !inPrefix(ips, greenCIDR) || !inPrefix(ips, greenCIDR6) {
		t.Fatalf("pod with a blank annotation got %v, want addresses of the namespace's green-pool", ips)
	}
}
