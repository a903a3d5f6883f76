package plugin

import (
	"errors"
	"reflect"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		conf     string
		wantCode uint
		want     func(c *Config) bool
	}{
		{name: "defaults", conf: `{"cniVersion": "1.1.0", "name": "podnet", "type": "bridge", "ipam": {"type": "herald-ipam"}}`,
			want: func(c *Config) bool {
				return c.Network == "podnet" && c.CNIVersion == "1.1.0" && c.IPAM.Socket == v1.DefaultSocket &&
					c.IPAM.StateDir == v1.DefaultStateDir && c.Routes == nil && c.PrevResult == nil && !c.HasValidAttachments
			}},
		{name: "everything set", conf: `{"cniVersion": "1.0.0", "name": "n", "ipam": {"type": "herald-ipam", "socket": "/run/h/s.sock", "stateDir": "/var/lib/h",
				"routes": [{"dst": "0.0.0.0/0"}, {"dst": "fd00::/8", "gw": "fd00::1"}]}}`,
			want: func(c *Config) bool {
				return c.IPAM.Socket == "/run/h/s.sock" && c.IPAM.StateDir == "/var/lib/h" && len(c.Routes) == 2 &&
					c.Routes[0].Dst.String() == "0.0.0.0/0" && c.Routes[0].GW == nil &&
					c.Routes[1].Dst.String() == "fd00::/8" && c.Routes[1].GW.String() == "fd00::1"
			}},
		{name: "empty routes replace the agent's with none", conf: `{"name": "n", "ipam": {"routes": []}}`,
			want: func(c *Config) bool { return c.Routes != nil && len(c.Routes) == 0 }},
		{name: "null routes are no routes key", conf: `{"name": "n", "ipam": {"routes": null}}`,
			want: func(c *Config) bool { return c.Routes == nil }},
		{name: "keys of other plugins are theirs", conf: `{"name": "n", "type": "bridge", "bridge": "cni0", "ipMasq": true, "runtimeConfig": {"x": 1}, "ipam": {"type": "herald-ipam"}}`,
			want: func(c *Config) bool { return c.IPAM.Type == "herald-ipam" }},
		{name: "prevResult of an older version", conf: `{"cniVersion": "0.4.0", "name": "n", "ipam": {},
				"prevResult": {"ips": [{"version": "4", "address": "10.1.0.5/24", "gateway": "10.1.0.1"}]}}`,
			want: func(c *Config) bool {
				return c.PrevResult != nil && len(c.PrevResult.IPs) == 1 && c.PrevResult.IPs[0].Address.String() == "10.1.0.5/24"
			}},
		{name: "valid attachments", conf: `{"name": "n", "ipam": {}, "cni.dev/valid-attachments": [{"containerID": "a", "ifname": "eth0"}]}`,
			want: func(c *Config) bool {
				return c.HasValidAttachments && reflect.DeepEqual(c.ValidAttachments, []v1.Attachment{{ContainerID: "a", IfName: "eth0"}})
			}},

		{name: "not JSON", conf: `{"name": "n", "ipam": `, wantCode: 6},
		{name: "no ipam section", conf: `{"name": "n", "type": "bridge"}`, wantCode: 7},
		{name: "null ipam section", conf: `{"name": "n", "ipam": null}`, wantCode: 7},
		{name: "unknown ipam key", conf: `{"name": "n", "ipam": {"type": "herald-ipam", "subnet": "10.0.0.0/8"}}`, wantCode: 2},
		{name: "socket not a string", conf: `{"name": "n", "ipam": {"socket": 5}}`, wantCode: 6},
		{name: "relative socket", conf: `{"name": "n", "ipam": {"socket": "ipam.sock"}}`, wantCode: 7},
		{name: "relative stateDir", conf: `{"name": "n", "ipam": {"stateDir": "state"}}`, wantCode: 7},
		{name: "route without prefix length", conf: `{"name": "n", "ipam": {"routes": [{"dst": "10.0.0.0"}]}}`, wantCode: 7},
		{name: "route with a bad gateway", conf: `{"name": "n", "ipam": {"routes": [{"dst": "10.0.0.0/8", "gw": "gateway"}]}}`, wantCode: 7},
		{name: "route of mixed families", conf: `{"name": "n", "ipam": {"routes": [{"dst": "10.0.0.0/8", "gw": "fd00::1"}]}}`, wantCode: 7},
		{name: "unknown route key", conf: `{"name": "n", "ipam": {"routes": [{"dst": "10.0.0.0/8", "mtu": 1400}]}}`, wantCode: 2},
		{name: "prevResult that does not decode", conf: `{"cniVersion": "1.1.0", "name": "n", "ipam": {}, "prevResult": {"ips": [{"address": "x"}]}}`, wantCode: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.conf))
			if tc.wantCode != 0 {
				var e *types.Error
				if !errors.As(err, &e) || e.Code != tc.wantCode {
					t.Fatalf("error %v, want CNI error %d", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(c) {
				t.Errorf("parsed %+v (routes %v)", c, c.Routes)
			}
		})
	}
}

// The bridge plugin's bridge goes to the agent, which puts the gateways of
// the node's CIDRs on it.
func TestConfigBridge(t *testing.T) {
	c, err := ParseConfig([]byte(`{"cniVersion": "1.1.0", "name": "herald", "type": "bridge", "bridge": "cni0", "ipam": {"type": "herald-ipam"}}`))
	if err != nil || c.Bridge != "cni0" {
		t.Fatalf("ParseConfig = %+v, %v; want Bridge cni0", c, err)
	}
	c, err = ParseConfig([]byte(`{"cniVersion": "1.1.0", "name": "herald", "type": "ptp", "ipam": {"type": "herald-ipam"}}`))
	if err != nil || c.Bridge != "" {
		t.Fatalf("ParseConfig of a ptp network = %+v, %v; want no bridge", c, err)
	}
}
