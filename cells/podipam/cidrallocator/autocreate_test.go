package cidrallocator

import (
	"fmt"
	"testing"
)

func TestParseAutoCreate(t *testing.T) {
	pools, err := parseAutoCreate("default=ipv4-cidrs:10.10.0.0/16,10.11.0.0/16;ipv4-mask-size:24  other=ipv6-cidrs:fd00:10::/104;ipv6-mask-size:120")
	if err != nil {
		t.Fatal(err)
	}
	if len(pools) != 2 || pools[0].Name != "default" || pools[1].Name != "other" {
		t.Fatalf("pools = %+v", pools)
	}
	d := pools[0].Spec
	if d.IPv4 == nil || len(d.IPv4.CIDRs) != 2 || d.IPv4.CIDRs[1] != "10.11.0.0/16" || d.IPv4.MaskSize != 24 || d.IPv6 != nil {
		t.Fatalf("default = %+v", d)
	}
	o := pools[1].Spec
	if o.IPv6 == nil || o.IPv6.CIDRs[0] != "fd00:10::/104" || o.IPv6.MaskSize != 120 || o.IPv4 != nil {
		t.Fatalf("other = %+v", o)
	}
	for _, bad := range []string{"p=ipv4-cidrs", "p=ipv4-mask-size:x", "p=color:blue", "p=ipv4-mask-size:24", "p", "p=ipv4-cidrs:10.0.0.0/8;ipv4-mask-size:24 p=ipv4-cidrs:10.0.0.0/8;ipv4-mask-size:24"} {
		if _, err := parseAutoCreate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if pools, err := parseAutoCreate(""); err != nil || len(pools) != 0 {
		t.Errorf("empty: %v %v", pools, err)
	}
}

// The forms a value copied from Cilium takes: pools separated by commas
// (a comma inside a pool's CIDR list stays there), or a JSON object.
func TestParseAutoCreateCiliumForms(t *testing.T) {
	want := map[string][]string{"default": {"10.10.0.0/16", "10.11.0.0/16"}, "other": {"10.12.0.0/16"}}
	for _, value := range []string{
		"default=ipv4-cidrs:10.10.0.0/16,10.11.0.0/16;ipv4-mask-size:24,other=ipv4-cidrs:10.12.0.0/16;ipv4-mask-size:26",
		"default=ipv4-cidrs:10.10.0.0/16,10.11.0.0/16;ipv4-mask-size:24 other=ipv4-cidrs:10.12.0.0/16;ipv4-mask-size:26",
		`{"default": "ipv4-cidrs:10.10.0.0/16,10.11.0.0/16;ipv4-mask-size:24", "other": "ipv4-cidrs:10.12.0.0/16;ipv4-mask-size:26"}`,
	} {
		pools, err := parseAutoCreate(value)
		if err != nil {
			t.Errorf("%s: %v", value, err)
			continue
		}
		got := map[string][]string{}
		for _, p := range pools {
			for _, c := range p.Spec.IPv4.CIDRs {
				got[p.Name] = append(got[p.Name], string(c))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: pools %v, want %v", value, got, want)
		}
	}
	for _, bad := range []string{`{"default": 8}`, `{"default": "ipv4-cidrs"`, "default=ipv4-cidrs:10.10.0.0/16;ipv4-mask-size:24,default=ipv4-cidrs:10.12.0.0/16;ipv4-mask-size:26"} {
		if _, err := parseAutoCreate(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
