package bgp

import (
	"fmt"
	"testing"

	"github.com/heraldlb/herald/test/suite"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// withdrawingAgents restarts the agents with Herald's default
// enable-no-service-endpoints-routable=false (the suite runs them with
// true), and back when the test ends.
func withdrawingAgents(t *testing.T) {
	t.Helper()
	ensureAgents(t)
	restartAgentsWith(t, "--enable-no-service-endpoints-routable=false")
}

// waitNotAdvertisedEvents waits until the Service's BGPNotAdvertised
// Events count want occurrences (the recorder folds repeats into one
// Event's count).
func waitNotAdvertisedEvents(t *testing.T, ns, svc string, want int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d BGPNotAdvertised Events on %s/%s", want, ns, svc), func() (bool, string) {
		n, msgs, err := suite.WarningEvents(ctxT(t), kube, ns, svc, "BGPNotAdvertised", "has no ready endpoint")
		if err != nil {
			return false, err.Error()
		}
		return n == want, fmt.Sprintf("%d: %q", n, msgs)
	})
}

// TestWithdrawnWithoutReadyEndpoint: with the default
// enable-no-service-endpoints-routable=false, a Service
// (externalTrafficPolicy Cluster) with no ready endpoint anywhere is
// advertised by no node, seen at FRR, and gets one BGPNotAdvertised Event
// per withdrawal; a terminating endpoint that still serves does not keep
// it; once an endpoint is ready, every node advertises it again.
func TestWithdrawnWithoutReadyEndpoint(t *testing.T) {
	withdrawingAgents(t)
	ns := newNamespace(t)
	createService(t, ns, "web", singleStack(corev1.IPv4Protocol))
	vip := waitVIP(t, ns, "web")
	p := hostPrefix(vip)
	// No EndpointSlice yet: nobody advertises.
	waitWithdrawn(t, p)
	waitNotAdvertisedEvents(t, ns, "web", 1)

	slices := kube.DiscoveryV1().EndpointSlices(ns)
	slice, err := slices.Create(ctxT(t), &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"198.18.46.2"}, NodeName: ptrTo("node2"), Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitAdvertisedBy(t, p, nodes...)

	t.Logf("the only endpoint terminates (ready false, serving true)")
	slice.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Ready: ptrTo(false), Serving: ptrTo(true), Terminating: ptrTo(true)}
	if slice, err = slices.Update(ctxT(t), slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWithdrawn(t, p)
	waitNotAdvertisedEvents(t, ns, "web", 2)

	t.Logf("ready again")
	slice.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Ready: ptrTo(true)}
	if _, err = slices.Update(ctxT(t), slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAdvertisedBy(t, p, nodes...)
	waitNotAdvertisedEvents(t, ns, "web", 2)
}
