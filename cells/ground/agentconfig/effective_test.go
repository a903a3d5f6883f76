package agentconfig

import "testing"

func TestDisplayName(t *testing.T) {
	for flag, want := range map[string]string{
		"enable-l2-announcements":         "EnableL2Announcements",
		"enable-ipv6":                     "EnableIPv6",
		"default-lb-service-ipam":         "DefaultLBServiceIPAM",
		"k8s-client-qps":                  "K8sClientQPS",
		"l2-announcements-lease-duration": "L2AnnouncementsLeaseDuration",
		"prometheus-serve-addr":           "PrometheusServeAddr",
		"devices":                         "Devices",
		// The names the spec's troubleshooting greps for.
		"kube-proxy-replacement": "KubeProxyReplacement",
		"enable-external-ips":    "EnableExternalIPs",
		// As Cilium's agent names them.
		"ipam-default-ip-pool":            "IPAMDefaultIPPool",
		"auto-create-cilium-pod-ip-pools": "AutoCreateCiliumPodIPPools",
	} {
		if got := DisplayName(flag); got != want {
			t.Errorf("%s: %s, want %s", flag, got, want)
		}
	}
}
