package plugin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/types"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

func TestToResult(t *testing.T) {
	override, err := parseRoute("198.18.0.0/15", "198.18.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		resp    v1.AddResponse
		routes  []*types.Route
		want    string // the result as JSON
		wantErr string
	}{
		{name: "IPv4 with gateway and routes",
			resp: v1.AddResponse{IPs: []v1.IPConfig{{Address: "10.20.1.7/24", Gateway: "10.20.1.1", Pool: "default"}},
				Routes: []v1.Route{{Dst: "0.0.0.0/0", GW: "10.20.1.1"}, {Dst: "10.30.0.0/16"}}},
			want: `{"cniVersion":"1.1.0","ips":[{"address":"10.20.1.7/24","gateway":"10.20.1.1"}],"routes":[{"dst":"0.0.0.0/0","gw":"10.20.1.1"},{"dst":"10.30.0.0/16"}]}`},
		{name: "the address keeps its host bits and the pool's prefix length",
			resp: v1.AddResponse{IPs: []v1.IPConfig{{Address: "10.20.1.255/23"}}},
			want: `{"cniVersion":"1.1.0","ips":[{"address":"10.20.1.255/23"}]}`},
		{name: "route destinations are networks",
			resp: v1.AddResponse{IPs: []v1.IPConfig{{Address: "fd00::7/64"}}, Routes: []v1.Route{{Dst: "fd00:1::5/48"}}},
			want: `{"cniVersion":"1.1.0","ips":[{"address":"fd00::7/64"}],"routes":[{"dst":"fd00:1::/48"}]}`},
		{name: "configured routes win",
			resp:   v1.AddResponse{IPs: []v1.IPConfig{{Address: "198.18.0.9/24"}}, Routes: []v1.Route{{Dst: "0.0.0.0/0"}}},
			routes: []*types.Route{override},
			want:   `{"cniVersion":"1.1.0","ips":[{"address":"198.18.0.9/24"}],"routes":[{"dst":"198.18.0.0/15","gw":"198.18.0.1"}]}`},
		{name: "configured no routes win",
			resp:   v1.AddResponse{IPs: []v1.IPConfig{{Address: "198.18.0.9/24"}}, Routes: []v1.Route{{Dst: "0.0.0.0/0"}}},
			routes: []*types.Route{},
			want:   `{"cniVersion":"1.1.0","ips":[{"address":"198.18.0.9/24"}]}`},

		{name: "no addresses", resp: v1.AddResponse{}, wantErr: "no addresses"},
		{name: "address without prefix length", resp: v1.AddResponse{IPs: []v1.IPConfig{{Address: "10.0.0.1"}}}, wantErr: "ips[0]"},
		{name: "bad gateway", resp: v1.AddResponse{IPs: []v1.IPConfig{{Address: "10.0.0.1/24", Gateway: "10.0.0"}}}, wantErr: "gateway"},
		{name: "gateway of the other family", resp: v1.AddResponse{IPs: []v1.IPConfig{{Address: "10.0.0.1/24"}, {Address: "fd00::1/64", Gateway: "10.0.0.254"}}},
			wantErr: "ips[1]"},
		{name: "bad route", resp: v1.AddResponse{IPs: []v1.IPConfig{{Address: "10.0.0.1/24"}}, Routes: []v1.Route{{Dst: "default"}}}, wantErr: "routes[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := toResult(&tc.resp, tc.routes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, string(b), tc.want)
		})
	}
}
