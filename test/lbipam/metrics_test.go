package lbipam

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/agentproc"
)

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpGet(url string) (int, string, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestMetricsAndHealth scrapes a running agent: the pool and Service
// series follow what LB IPAM decided, and the probes answer.
func TestMetricsAndHealth(t *testing.T) {
	metricsAddr, healthAddr := freeAddr(t), freeAddr(t)
	a := startAgent(t, "node-metrics", "--prometheus-serve-addr", metricsAddr, "--health-serve-addr", healthAddr)
	waitLeader(t, a)
	s := newScenario(t)
	s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "metrics-pool"
spec:
  blocks:
  - cidr: "10.77.0.0/30"
  serviceSelector:
    matchLabels:
      io.kubernetes.service.namespace: ` + s.ns + `
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: LoadBalancer
  ports:
  - port: 80
---
apiVersion: v1
kind: Service
metadata:
  name: lonely
  labels:
    color: nothing-selects-me
  annotations:
    lbipam.cilium.io/ips: "10.99.0.1"
spec:
  type: LoadBalancer
  ports:
  - port: 80
`)
	s.waitSatisfied("web", "10.77.0.0")

	waitFor(t, time.Minute, func() (bool, string) {
		fams, err := agentproc.Scrape(metricsAddr)
		if err != nil {
			return false, err.Error()
		}
		checks := []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"herald_lbipam_pool_ips", map[string]string{"pool": "metrics-pool", "state": "total"}, 4},
			{"herald_lbipam_pool_ips", map[string]string{"pool": "metrics-pool", "state": "used"}, 1},
			{"herald_lbipam_pool_ips", map[string]string{"pool": "metrics-pool", "state": "available"}, 3},
			{"herald_lbipam_pool_conflicting", map[string]string{"pool": "metrics-pool"}, 0},
			{"herald_lbipam_services_unsatisfied", map[string]string{"reason": "no_pool"}, 1},
			{"herald_build_info", nil, 1},
		}
		for _, c := range checks {
			got, ok := fams.Value(c.name, c.labels)
			if !ok || got != c.want {
				return false, fmt.Sprintf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
			}
		}
		if n, ok := fams.Value("herald_lbipam_assignment_latency_seconds", nil); !ok || n < 1 {
			return false, fmt.Sprintf("assignment latency samples: %v", n)
		}
		if _, ok := fams["herald_reconcile_duration_seconds"]; !ok {
			return false, "no reconciler metrics"
		}
		return true, ""
	})

	code, body, err := httpGet("http://" + healthAddr + "/healthz")
	if err != nil || code != http.StatusOK || !strings.Contains(body, "lb-ipam.job-allocate: OK leading") {
		t.Fatalf("/healthz: %d %v\n%s", code, err, body)
	}
	if code, _, err := httpGet("http://" + healthAddr + "/livez"); err != nil || code != http.StatusOK {
		t.Fatalf("/livez: %d %v", code, err)
	}
}
