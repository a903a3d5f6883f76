package l2

import (
	"context"
	"fmt"
	"testing"

	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/suite"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// withdrawingAgents restarts the three agents with Herald's default
// enable-no-service-endpoints-routable=false (the suite runs them with
// true), and back when the test ends.
func withdrawingAgents(t *testing.T) {
	t.Helper()
	ensureAgents(t)
	agentproc.RestartWith(t, agents(), func(t testing.TB) { ensureAgents(t) }, "--enable-no-service-endpoints-routable=false")
}

// setTerminating marks every endpoint of the Service's EndpointSlice
// terminating, still serving, as the EndpointSlice controller does while
// a pod shuts down.
func (s *scenario) setTerminating(svc string) {
	s.t.Helper()
	api := kube.DiscoveryV1().EndpointSlices(s.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		slice, err := api.Get(context.Background(), svc+"-pods", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range slice.Endpoints {
			slice.Endpoints[i].Conditions = discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}
		}
		_, err = api.Update(context.Background(), slice, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		s.t.Fatalf("marking the endpoints of %s/%s terminating: %v", s.ns, svc, err)
	}
}

// waitNotAnnouncedEvents waits until the Service's L2NotAnnounced Events
// for want of a ready endpoint count want occurrences (the recorder folds
// repeats into one Event's count).
func (s *scenario) waitNotAnnouncedEvents(svc string, want int) {
	s.t.Helper()
	waitFor(s.t, func() (bool, string) {
		n, msgs, err := suite.WarningEvents(context.Background(), kube, s.ns, svc, "L2NotAnnounced", "has no ready endpoint")
		if err != nil {
			return false, err.Error()
		}
		return n == want, fmt.Sprintf("%d L2NotAnnounced Events for want of a ready endpoint on %s/%s, want %d: %q", n, s.ns, svc, want, msgs)
	})
}

// TestWithdrawnWithoutReadyEndpoint: with the default
// enable-no-service-endpoints-routable=false, a Service
// (externalTrafficPolicy Cluster) without a ready endpoint is not
// announced: ARP requests for its VIP go unanswered, and it gets one
// L2NotAnnounced Event per withdrawal. A terminating endpoint that still
// serves does not keep it. Once an endpoint is ready, the VIP is answered
// and served through kube-proxy.
func TestWithdrawnWithoutReadyEndpoint(t *testing.T) {
	ensureTraffic(t)
	withdrawingAgents(t)
	s := newScenario(t)
	s.createPolicy("all", nil)
	node2 := nodes[1]

	t.Logf("a Service without an EndpointSlice")
	s.createServiceWith("web", singleStack(corev1.IPv4Protocol))
	vip := s.waitVIP("web")
	s.waitNotAnnouncedEvents("web", 1)
	for _, n := range nodes {
		waitWithdrawn(t, n, vip)
	}
	expectSilent(t, vip)

	t.Logf("its endpoint is ready on %s", node2.Name)
	s.setEndpoints("web", corev1.IPv4Protocol, node2)
	owner := s.waitOwner("web", vip)
	expectAnsweredOnlyBy(t, vip, owner)
	t.Logf("served: %s", waitServed(t, vip))

	t.Logf("the only endpoint terminates (ready false, serving true)")
	s.setTerminating("web")
	for _, n := range nodes {
		waitWithdrawn(t, n, vip)
	}
	expectSilent(t, vip)
	s.waitNotAnnouncedEvents("web", 2)

	t.Logf("a new endpoint is ready on %s", node2.Name)
	s.setEndpoints("web", corev1.IPv4Protocol, node2)
	owner = s.waitOwner("web", vip)
	expectAnsweredOnlyBy(t, vip, owner)
	t.Logf("served again: %s", waitServed(t, vip))

	t.Logf("no endpoint at all")
	s.setEndpoints("web", corev1.IPv4Protocol)
	for _, n := range nodes {
		waitWithdrawn(t, n, vip)
	}
	expectSilent(t, vip)
	// One Event per withdrawal, none for the derivations in between.
	s.waitNotAnnouncedEvents("web", 3)
}
