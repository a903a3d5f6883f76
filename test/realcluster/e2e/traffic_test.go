package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// curlVIP fetches http://vip/ from the client namespace.
func curlVIP(vip netip.Addr) (string, error) { return curlVIPWithin(vip, 2*time.Second) }

// curlVIPWithin is curlVIP allowed maxTime.
func curlVIPWithin(vip netip.Addr, maxTime time.Duration) (string, error) {
	url := "http://" + vip.String() + "/"
	if vip.Is6() {
		url = "http://[" + vip.String() + "]/"
	}
	out, err := exec.Command("ip", "netns", "exec", cl.ClientHost.Netns, "curl", "-sS", "--max-time", strconv.FormatFloat(maxTime.Seconds(), 'f', -1, 64), url).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("curl %s from %s: %w: %s", url, cl.ClientHost.Name, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// answeredBy is the pod name in an answer of httpecho ("<pod>: ...").
func answeredBy(answer string) string {
	name, _, _ := strings.Cut(answer, ":")
	return name
}

// testLoadBalancerTraffic: a Deployment of the backend and a LoadBalancer
// Service: the Service gets an IP of the LAN pool, the EndpointSlice
// controller lists the pods, and curl from the client through the IP
// reaches every pod (L2 announcement, then kube-proxy on the announcing
// node).
func testLoadBalancerTraffic(t *testing.T) {
	ns := newNamespace(t, "traffic", nil)
	pods := deployBackend(t, ns, "web", 3, nil)
	_, vip := loadBalancer(t, ns, "web", nil)
	if !netip.MustParsePrefix("198.18.16.192/26").Contains(vip) {
		t.Fatalf("Service IP %s is not from the pool lan", vip)
	}
	waitFor(t, timeout, func() (bool, string) {
		slices, err := cl.Client.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, s := range slices.Items {
			if s.Labels[discoveryv1.LabelManagedBy] != "endpointslice-controller.k8s.io" {
				return false, fmt.Sprintf("EndpointSlice %s managed by %q", s.Name, s.Labels[discoveryv1.LabelManagedBy])
			}
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					ready++
				}
			}
		}
		// A single-stack Service: one IPv4 endpoint per pod.
		return ready == len(pods), fmt.Sprintf("%d ready endpoints in the EndpointSlices of web, want %d", ready, len(pods))
	})
	seen := map[string]bool{}
	waitFor(t, timeout, func() (bool, string) {
		answer, err := curlVIP(vip)
		if err != nil {
			return false, err.Error()
		}
		seen[answeredBy(answer)] = true
		return len(seen) == len(pods), fmt.Sprintf("curl through %s reached %d of %d pods (%v)", vip, len(seen), len(pods), seen)
	})
	t.Logf("curl through %s reached all %d pods", vip, len(pods))
}

// waitCurl waits until curl through vip answers.
func waitCurl(t testing.TB, vip netip.Addr) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		_, err := curlVIP(vip)
		return err == nil, fmt.Sprint(err)
	})
}
