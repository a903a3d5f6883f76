package tables

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseLBAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		lbIP        string
		wantIPs     []string
		wantKey     string
		wantCross   []string
		wantOptIn   bool
		wantErr     string // substring of Error, "" = no error
	}{
		{name: "none"},
		{
			name:        "spec example",
			annotations: map[string]string{AnnotationIPs: "20.0.10.100,20.0.10.200"},
			wantIPs:     []string{"20.0.10.100", "20.0.10.200"},
		},
		{
			name:        "spaces, duplicates and IPv6",
			annotations: map[string]string{AnnotationIPs: " 20.0.10.100 , 2004::5,20.0.10.100,"},
			wantIPs:     []string{"20.0.10.100", "2004::5"},
		},
		{
			name:        "legacy spelling",
			annotations: map[string]string{LegacyAnnotationIPs: "20.0.10.7", LegacyAnnotationSharingKey: "k", LegacyAnnotationSharingCross: "a,b"},
			wantIPs:     []string{"20.0.10.7"}, wantKey: "k", wantCross: []string{"a", "b"},
		},
		{
			name:        "new spelling wins over legacy",
			annotations: map[string]string{AnnotationIPs: "1.1.1.1", LegacyAnnotationIPs: "2.2.2.2"},
			wantIPs:     []string{"1.1.1.1"},
		},
		{
			name:        "loadBalancerIP joins the annotation",
			annotations: map[string]string{AnnotationIPs: "1.1.1.1"}, lbIP: "3.3.3.3",
			wantIPs: []string{"1.1.1.1", "3.3.3.3"},
		},
		{
			name:        "bad IP is quoted, good ones kept",
			annotations: map[string]string{AnnotationIPs: "20.0.10.100,20.0.10.300"},
			wantIPs:     []string{"20.0.10.100"},
			wantErr:     `invalid IP address "20.0.10.300"`,
		},
		{
			name: "bad loadBalancerIP", lbIP: "not-an-ip",
			wantErr: `spec.loadBalancerIP: invalid IP address "not-an-ip"`,
		},
		{
			name:        "a list of no addresses is an error",
			annotations: map[string]string{AnnotationIPs: " , "},
			wantErr:     `no IP address in`,
		},
		{
			name:        "bad entry among good ones names the bad one",
			annotations: map[string]string{AnnotationIPs: "20.0.10.5,foo"},
			wantIPs:     []string{"20.0.10.5"},
			wantErr:     `annotation lbipam.cilium.io/ips: invalid IP address "foo" in "20.0.10.5,foo"`,
		},
		// A blank value is no request, as in Cilium: a Helm template with an
		// empty default must not make the Service invalid.
		{
			name:        "empty annotations are not set",
			annotations: map[string]string{AnnotationIPs: "", AnnotationSharingKey: "", AnnotationSharingCrossNS: "", AnnotationSharingPermitDifferentPods: ""},
		},
		{
			name:        "blank older spellings are not set",
			annotations: map[string]string{LegacyAnnotationIPs: " ", LegacyAnnotationSharingKey: "\t", LegacyAnnotationSharingCross: "  "},
		},
		{
			name:        "empty annotation, loadBalancerIP still requested",
			annotations: map[string]string{AnnotationIPs: ""}, lbIP: "3.3.3.3",
			wantIPs: []string{"3.3.3.3"},
		},
		{
			// Cilium reads the first spelling present and finds nothing in it.
			name:        "empty new spelling hides the older one, as in Cilium",
			annotations: map[string]string{AnnotationIPs: "", LegacyAnnotationIPs: "2.2.2.2", AnnotationSharingKey: "", LegacyAnnotationSharingKey: "k"},
		},
		{
			name:        "cross namespace star",
			annotations: map[string]string{AnnotationSharingKey: "x", AnnotationSharingCrossNS: "*"},
			wantKey:     "x", wantCross: []string{"*"},
		},
		{
			name:        "bad namespace",
			annotations: map[string]string{AnnotationSharingCrossNS: "tenant-a,Tenant_B"},
			wantCross:   []string{"tenant-a"},
			wantErr:     `invalid namespace "Tenant_B"`,
		},
		{
			name:        "opt-in",
			annotations: map[string]string{AnnotationExternalIPsOptIn: "true"},
			wantOptIn:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ParseLBAnnotations(tt.annotations, tt.lbIP)
			var got []string
			for _, ip := range a.RequestedIPs {
				got = append(got, ip.String())
			}
			if strings.Join(got, ",") != strings.Join(tt.wantIPs, ",") {
				t.Errorf("ips %v, want %v", got, tt.wantIPs)
			}
			if a.SharingKey != tt.wantKey {
				t.Errorf("key %q, want %q", a.SharingKey, tt.wantKey)
			}
			if strings.Join(a.SharingCrossNamespace, ",") != strings.Join(tt.wantCross, ",") {
				t.Errorf("cross %v, want %v", a.SharingCrossNamespace, tt.wantCross)
			}
			if a.ExternalIPsOptIn != tt.wantOptIn {
				t.Errorf("opt-in %v", a.ExternalIPsOptIn)
			}
			if (tt.wantErr == "") != (a.Error == "") || !strings.Contains(a.Error, tt.wantErr) {
				t.Errorf("error %q, want %q", a.Error, tt.wantErr)
			}
		})
	}
}

// FuzzParseLBAnnotations checks the parser never panics and that whatever
// it accepts is a valid, unmapped, zone-less address.
func FuzzParseLBAnnotations(f *testing.F) {
	f.Add("20.0.10.100,20.0.10.200", "", "tenant-a,*")
	f.Add("2004::1, ::ffff:1.2.3.4", "1.2.3.4", "")
	f.Add(",,,", "fe80::1%eth0", "a,,b")
	f.Fuzz(func(t *testing.T, ips, lbIP, cross string) {
		a := ParseLBAnnotations(map[string]string{AnnotationIPs: ips, AnnotationSharingCrossNS: cross}, lbIP)
		seen := map[netip.Addr]bool{}
		for _, ip := range a.RequestedIPs {
			if !ip.IsValid() || ip.Zone() != "" || ip.Is4In6() {
				t.Fatalf("accepted bad address %v", ip)
			}
			if seen[ip] {
				t.Fatalf("duplicate %v", ip)
			}
			seen[ip] = true
		}
		for _, ns := range a.SharingCrossNamespace {
			if ns != "*" && !validNamespace(ns) {
				t.Fatalf("accepted bad namespace %q", ns)
			}
		}
	})
}

// lbipam.cilium.io/sharing-permit-different-pods is read as
// strconv.ParseBool reads it, as Cilium does; a value that is no boolean
// permits nothing and is kept for the message of the rule it would relax.
func TestParseSharingPermitDifferentPods(t *testing.T) {
	for _, c := range []struct {
		annotations map[string]string
		permit      bool
		invalid     string
	}{
		{nil, false, ""},
		{map[string]string{AnnotationSharingPermitDifferentPods: "true"}, true, ""},
		{map[string]string{AnnotationSharingPermitDifferentPods: " True "}, true, ""},
		{map[string]string{AnnotationSharingPermitDifferentPods: "false"}, false, ""},
		{map[string]string{LegacyAnnotationSharingPermitDifferentPods: "1"}, true, ""},
		{map[string]string{AnnotationSharingPermitDifferentPods: "false", LegacyAnnotationSharingPermitDifferentPods: "true"}, false, ""},
		{map[string]string{AnnotationSharingPermitDifferentPods: "yes"}, false, "yes"},
	} {
		a := ParseLBAnnotations(c.annotations, "")
		if a.SharingPermitDifferentPods != c.permit || a.SharingPermitInvalid != c.invalid || a.Error != "" {
			t.Errorf("%v: permit %v, invalid %q, error %q; want %v, %q, no error", c.annotations, a.SharingPermitDifferentPods, a.SharingPermitInvalid, a.Error, c.permit, c.invalid)
		}
	}
}
