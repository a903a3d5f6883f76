package migrate

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// FieldManager owns the fields --apply writes.
const FieldManager = "herald-migrate"

// resources are the plural names of the kinds the translation makes.
var resources = map[string]string{
	"CiliumLoadBalancerIPPool":   "ciliumloadbalancerippools",
	"CiliumL2AnnouncementPolicy": "ciliuml2announcementpolicies",
	"CiliumBGPAdvertisement":     "ciliumbgpadvertisements",
	"CiliumBGPPeerConfig":        "ciliumbgppeerconfigs",
	"CiliumBGPClusterConfig":     "ciliumbgpclusterconfigs",
}

// Applied is what applying one object did.
type Applied struct {
	Ref string // e.g. CiliumLoadBalancerIPPool/example
	// Outcome: "created", "configured" or "unchanged".
	Outcome string
}

// Apply writes the objects with server-side apply as FieldManager, without
// force: a field another manager set to a different value is a conflict,
// reported, not overwritten. Nothing is ever deleted. It stops at the first
// error, reporting what it applied before.
func Apply(ctx context.Context, dyn dynamic.Interface, objs []runtime.Object) ([]Applied, error) {
	var done []Applied
	for _, obj := range objs {
		u, err := Unstructured(obj)
		if err != nil {
			return done, err
		}
		ref := u.GetKind() + "/" + u.GetName()
		gvr := schema.GroupVersionResource{Group: v2alpha1.SchemeGroupVersion.Group, Version: v2alpha1.SchemeGroupVersion.Version, Resource: resources[u.GetKind()]}
		client := dyn.Resource(gvr)
		before := ""
		if cur, err := client.Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
			before = cur.GetResourceVersion()
		}
		after, err := client.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager})
		if err != nil {
			return done, fmt.Errorf("applying %s: %w", ref, err)
		}
		outcome := "configured"
		switch after.GetResourceVersion() {
		case before:
			outcome = "unchanged"
		default:
			if before == "" {
				outcome = "created"
			}
		}
		done = append(done, Applied{Ref: ref, Outcome: outcome})
	}
	return done, nil
}
