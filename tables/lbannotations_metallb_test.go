package tables

import (
	"strings"
	"testing"
)

func TestParseMetalLBAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		lbIP        string
		wantIPs     string // comma separated
		wantKey     string
		wantPool    string
		wantPoolKey string
		wantDis     []string // substrings of Disagreement; nil = none
		wantErr     string   // substring of Error, "" = no error
	}{
		{
			name:        "loadBalancerIPs dual-stack",
			annotations: map[string]string{AnnotationMetalLBIPs: "198.18.0.10, fd00::10"},
			wantIPs:     "198.18.0.10,fd00::10",
		},
		{
			name:        "older spelling",
			annotations: map[string]string{LegacyAnnotationMetalLBIPs: "198.18.0.10", LegacyAnnotationMetalLBSharedIP: "k", LegacyAnnotationMetalLBPool: "blue"},
			wantIPs:     "198.18.0.10", wantKey: "k", wantPool: "blue", wantPoolKey: LegacyAnnotationMetalLBPool,
		},
		{
			name: "metallb.io wins over the older spelling, as in MetalLB",
			annotations: map[string]string{
				AnnotationMetalLBIPs: "198.18.0.1", LegacyAnnotationMetalLBIPs: "198.18.0.2",
				AnnotationMetalLBSharedIP: "new", LegacyAnnotationMetalLBSharedIP: "old",
				AnnotationMetalLBPool: "a", LegacyAnnotationMetalLBPool: "b",
			},
			wantIPs: "198.18.0.1", wantKey: "new", wantPool: "a", wantPoolKey: AnnotationMetalLBPool,
			// ... and the older one, saying otherwise, is not ignored silently.
			wantDis: []string{
				`annotation metallb.universe.tf/loadBalancerIPs "198.18.0.2" is ignored: it differs from metallb.io/loadBalancerIPs "198.18.0.1", which applies`,
				`annotation metallb.universe.tf/allow-shared-ip "old" is ignored: it differs from metallb.io/allow-shared-ip "new", which applies`,
				`annotation metallb.universe.tf/address-pool "b" is ignored: it differs from metallb.io/address-pool "a", which applies`,
			},
		},
		{
			name: "both MetalLB spellings saying the same agree",
			annotations: map[string]string{
				AnnotationMetalLBIPs: "198.18.0.1, fd00::1", LegacyAnnotationMetalLBIPs: "fd00::1,198.18.0.1",
				AnnotationMetalLBSharedIP: "k", LegacyAnnotationMetalLBSharedIP: " k ",
				AnnotationMetalLBPool: "a", LegacyAnnotationMetalLBPool: "a",
			},
			wantIPs: "198.18.0.1,fd00::1", wantKey: "k", wantPool: "a", wantPoolKey: AnnotationMetalLBPool,
		},
		{
			name: "the older MetalLB spelling differs from the Cilium annotation the newer agrees with",
			annotations: map[string]string{
				AnnotationIPs: "198.18.0.1", AnnotationMetalLBIPs: "198.18.0.1", LegacyAnnotationMetalLBIPs: "198.18.0.2",
				AnnotationSharingKey: "k", AnnotationMetalLBSharedIP: "k", LegacyAnnotationMetalLBSharedIP: "j",
			},
			wantIPs: "198.18.0.1", wantKey: "k",
			wantDis: []string{
				`annotation metallb.universe.tf/loadBalancerIPs "198.18.0.2" is ignored: it differs from lbipam.cilium.io/ips "198.18.0.1", which applies`,
				`annotation metallb.universe.tf/allow-shared-ip "j" is ignored: it differs from lbipam.cilium.io/sharing-key "k", which applies`,
			},
		},
		{
			name:        "an unparsable older spelling beside the newer is ignored, not an error",
			annotations: map[string]string{AnnotationMetalLBIPs: "198.18.0.1", LegacyAnnotationMetalLBIPs: "nope"},
			wantIPs:     "198.18.0.1",
			wantDis:     []string{`annotation metallb.universe.tf/loadBalancerIPs is ignored (invalid IP address "nope"`, "metallb.io/loadBalancerIPs applies"},
		},
		{
			name:        "a blank metallb.io spelling hides the older one, as in MetalLB",
			annotations: map[string]string{AnnotationMetalLBPool: "", LegacyAnnotationMetalLBPool: "b"},
		},
		{
			name:        "bad loadBalancerIPs is an invalid request",
			annotations: map[string]string{AnnotationMetalLBIPs: "198.18.0.1,198.18.0.300"},
			wantIPs:     "198.18.0.1",
			wantErr:     `annotation metallb.io/loadBalancerIPs: invalid IP address "198.18.0.300"`,
		},
		{
			name:        "spec.loadBalancerIP joins, as it does the Cilium list",
			annotations: map[string]string{AnnotationMetalLBIPs: "198.18.0.1"}, lbIP: "198.18.0.2",
			wantIPs: "198.18.0.1,198.18.0.2",
		},
		{
			name:        "same IPs in another order agree",
			annotations: map[string]string{AnnotationIPs: "198.18.0.1,fd00::1", AnnotationMetalLBIPs: "fd00::1, 198.18.0.1"},
			wantIPs:     "198.18.0.1,fd00::1",
		},
		{
			name:        "different IPs: Cilium wins",
			annotations: map[string]string{AnnotationIPs: "198.18.0.1", LegacyAnnotationMetalLBIPs: "198.18.0.2"},
			wantIPs:     "198.18.0.1",
			wantDis:     []string{`annotation metallb.universe.tf/loadBalancerIPs "198.18.0.2" is ignored: it differs from lbipam.cilium.io/ips "198.18.0.1"`},
		},
		{
			name:        "unparsable MetalLB list beside a Cilium one is ignored, not an error",
			annotations: map[string]string{LegacyAnnotationIPs: "198.18.0.1", AnnotationMetalLBIPs: "nope"},
			wantIPs:     "198.18.0.1",
			wantDis:     []string{`annotation metallb.io/loadBalancerIPs is ignored (invalid IP address "nope"`, "io.cilium/lb-ipam-ips applies"},
		},
		{
			name:        "allow-shared-ip is the sharing key",
			annotations: map[string]string{AnnotationMetalLBSharedIP: " web "},
			wantKey:     "web",
		},
		{
			name:        "same sharing keys agree",
			annotations: map[string]string{AnnotationSharingKey: "web", AnnotationMetalLBSharedIP: "web"},
			wantKey:     "web",
		},
		{
			name:        "different sharing keys: Cilium wins",
			annotations: map[string]string{LegacyAnnotationSharingKey: "web", AnnotationMetalLBSharedIP: "dns"},
			wantKey:     "web",
			wantDis:     []string{`annotation metallb.io/allow-shared-ip "dns" is ignored: it differs from io.cilium/lb-ipam-sharing-key "web"`},
		},
		{
			name: "both disagreements are listed",
			annotations: map[string]string{
				AnnotationIPs: "198.18.0.1", AnnotationMetalLBIPs: "198.18.0.2",
				AnnotationSharingKey: "a", AnnotationMetalLBSharedIP: "b",
			},
			wantIPs: "198.18.0.1", wantKey: "a",
			wantDis: []string{"metallb.io/loadBalancerIPs", "; annotation metallb.io/allow-shared-ip"},
		},
		{
			name:        "empty Cilium annotations leave MetalLB's to apply",
			annotations: map[string]string{AnnotationIPs: "", AnnotationMetalLBIPs: "198.18.0.1", AnnotationSharingKey: " ", AnnotationMetalLBSharedIP: "web"},
			wantIPs:     "198.18.0.1", wantKey: "web",
		},
		{
			name:        "empty MetalLB annotations are not set",
			annotations: map[string]string{AnnotationMetalLBIPs: "", AnnotationMetalLBSharedIP: " "},
		},
		{
			name:        "empty address-pool names no pool",
			annotations: map[string]string{AnnotationMetalLBPool: " "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ParseLBAnnotations(tt.annotations, tt.lbIP)
			var got []string
			for _, ip := range a.RequestedIPs {
				got = append(got, ip.String())
			}
			if strings.Join(got, ",") != tt.wantIPs {
				t.Errorf("ips %v, want %s", got, tt.wantIPs)
			}
			if a.SharingKey != tt.wantKey {
				t.Errorf("key %q, want %q", a.SharingKey, tt.wantKey)
			}
			if a.Pool != tt.wantPool || a.PoolAnnotation != tt.wantPoolKey {
				t.Errorf("pool %q (%s), want %q (%s)", a.Pool, a.PoolAnnotation, tt.wantPool, tt.wantPoolKey)
			}
			if (len(tt.wantDis) == 0) != (a.Disagreement == "") {
				t.Errorf("disagreement %q, want %q", a.Disagreement, tt.wantDis)
			}
			for _, w := range tt.wantDis {
				if !strings.Contains(a.Disagreement, w) {
					t.Errorf("disagreement %q lacks %q", a.Disagreement, w)
				}
			}
			if (tt.wantErr == "") != (a.Error == "") || !strings.Contains(a.Error, tt.wantErr) {
				t.Errorf("error %q, want %q", a.Error, tt.wantErr)
			}
		})
	}
}

// FuzzParseMetalLBAnnotations checks that whatever mix of Cilium and MetalLB
// lists and keys a Service carries, parsing never panics, accepts only
// valid addresses, and reports a disagreement only when both are set.
func FuzzParseMetalLBAnnotations(f *testing.F) {
	f.Add("198.18.0.1", "198.18.0.1", "k", "k")
	f.Add("", "fd00::1, 198.18.0.1", "", "x")
	f.Add("198.18.0.1", "::ffff:1.2.3.4,,", "a", "b")
	f.Fuzz(func(t *testing.T, ciliumIPs, metallbIPs, ciliumKey, metallbKey string) {
		ann := map[string]string{LegacyAnnotationMetalLBIPs: metallbIPs, AnnotationMetalLBSharedIP: metallbKey}
		if ciliumIPs != "" {
			ann[AnnotationIPs] = ciliumIPs
		}
		if ciliumKey != "" {
			ann[AnnotationSharingKey] = ciliumKey
		}
		a := ParseLBAnnotations(ann, "")
		for _, ip := range a.RequestedIPs {
			if !ip.IsValid() || ip.Zone() != "" || ip.Is4In6() {
				t.Fatalf("accepted bad address %v", ip)
			}
		}
		// A Cilium annotation that is only whitespace is not set.
		ciliumIPsSet, ciliumKeySet := strings.TrimSpace(ciliumIPs) != "", strings.TrimSpace(ciliumKey) != ""
		if a.Disagreement != "" && !ciliumIPsSet && !ciliumKeySet {
			t.Fatalf("disagreement %q without a Cilium annotation", a.Disagreement)
		}
		if ciliumKeySet && a.SharingKey != strings.TrimSpace(ciliumKey) {
			t.Fatalf("sharing key %q, want the Cilium one %q", a.SharingKey, ciliumKey)
		}
	})
}
