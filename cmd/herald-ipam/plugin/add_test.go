package plugin

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

func TestAdd(t *testing.T) {
	dual := v1.AddResponse{
		IPs: []v1.IPConfig{
			{Address: "10.20.1.7/24", Gateway: "10.20.1.1", Pool: "default"},
			{Address: "fd00:20:1::7/64", Gateway: "fd00:20:1::1", Pool: "default"},
		},
		Routes: []v1.Route{{Dst: "0.0.0.0/0", GW: "10.20.1.1"}, {Dst: "::/0"}},
	}
	const dualResult = `{"cniVersion": "1.1.0",
		"ips": [{"address": "10.20.1.7/24", "gateway": "10.20.1.1"}, {"address": "fd00:20:1::7/64", "gateway": "fd00:20:1::1"}],
		"routes": [{"dst": "0.0.0.0/0", "gw": "10.20.1.1"}, {"dst": "::/0"}]}`
	ok := &reply{status: http.StatusOK, body: dual}

	for _, tc := range []struct {
		name       string
		cniVersion string // 1.1.0 when empty
		ipam       string // more keys of the ipam section
		cniArgs    string
		reply      *reply // nil: no agent
		wantResult string
		wantCode   uint
		wantMsg    string
		wantSent   bool // the agent got the request
	}{
		{name: "dual-stack", cniArgs: k8sArgs1, reply: ok, wantResult: dualResult, wantSent: true},
		{name: "1.0.0", cniVersion: "1.0.0", cniArgs: k8sArgs1, reply: ok, wantSent: true,
			wantResult: `{"cniVersion": "1.0.0",
				"ips": [{"address": "10.20.1.7/24", "gateway": "10.20.1.1"}, {"address": "fd00:20:1::7/64", "gateway": "fd00:20:1::1"}],
				"routes": [{"dst": "0.0.0.0/0", "gw": "10.20.1.1"}, {"dst": "::/0"}]}`},
		{name: "0.4.0 result", cniVersion: "0.4.0", cniArgs: k8sArgs1, reply: ok, wantSent: true,
			wantResult: `{"cniVersion": "0.4.0",
				"ips": [{"version": "4", "address": "10.20.1.7/24", "gateway": "10.20.1.1"}, {"version": "6", "address": "fd00:20:1::7/64", "gateway": "fd00:20:1::1"}],
				"routes": [{"dst": "0.0.0.0/0", "gw": "10.20.1.1"}, {"dst": "::/0"}], "dns": {}}`},
		{name: "configured routes replace the agent's", ipam: `"routes": [{"dst": "198.18.0.0/15", "gw": "10.20.1.254"}]`,
			cniArgs: k8sArgs1, reply: ok, wantSent: true,
			wantResult: `{"cniVersion": "1.1.0",
				"ips": [{"address": "10.20.1.7/24", "gateway": "10.20.1.1"}, {"address": "fd00:20:1::7/64", "gateway": "fd00:20:1::1"}],
				"routes": [{"dst": "198.18.0.0/15", "gw": "10.20.1.254"}]}`},
		{name: "empty configured routes: none", ipam: `"routes": []`, cniArgs: k8sArgs1, reply: ok, wantSent: true,
			wantResult: `{"cniVersion": "1.1.0",
				"ips": [{"address": "10.20.1.7/24", "gateway": "10.20.1.1"}, {"address": "fd00:20:1::7/64", "gateway": "fd00:20:1::1"}]}`},
		{name: "address without gateway", cniArgs: k8sArgs1, wantSent: true,
			reply:      &reply{status: http.StatusOK, body: v1.AddResponse{IPs: []v1.IPConfig{{Address: "10.20.1.7/24", Pool: "p"}}}},
			wantResult: `{"cniVersion": "1.1.0", "ips": [{"address": "10.20.1.7/24"}]}`},

		// CNI_ARGS.
		{name: "no pod namespace", cniArgs: "IgnoreUnknown=1;K8S_POD_NAME=web-0", reply: ok,
			wantCode: 4, wantMsg: "K8S_POD_NAMESPACE"},
		{name: "no pod name", cniArgs: "IgnoreUnknown=1;K8S_POD_NAMESPACE=default", reply: ok,
			wantCode: 4, wantMsg: "K8S_POD_NAME"},
		{name: "no CNI_ARGS", reply: ok, wantCode: 4, wantMsg: "K8S_POD_NAMESPACE"},
		{name: "unknown arg without IgnoreUnknown", cniArgs: "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;FOO=bar", reply: ok,
			wantCode: 4, wantMsg: "CNI_ARGS"},
		{name: "unknown arg with IgnoreUnknown", cniArgs: "IgnoreUnknown=true;FOO=bar;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=uid-1", reply: ok,
			wantResult: dualResult, wantSent: true},
		{name: "Kubernetes args without IgnoreUnknown", cniArgs: "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=ctr1;K8S_POD_UID=uid-1", reply: ok,
			wantResult: dualResult, wantSent: true},
		{name: "malformed CNI_ARGS", cniArgs: "K8S_POD_NAMESPACE", reply: ok, wantCode: 4, wantMsg: "CNI_ARGS"},

		// The agent's answers.
		{name: "agent error passed on", cniArgs: k8sArgs1, wantSent: true,
			reply:    &reply{status: http.StatusConflict, body: v1.Error{Code: v1.CodePoolExhausted, Msg: "pool default is exhausted", Details: "no CIDR left"}},
			wantCode: v1.CodePoolExhausted, wantMsg: "pool default is exhausted"},
		{name: "agent waits for a CIDR", cniArgs: k8sArgs1, wantSent: true,
			reply:    &reply{status: http.StatusServiceUnavailable, body: v1.Error{Code: v1.CodeTryAgainLater, Msg: "waiting for a CIDR"}},
			wantCode: v1.CodeTryAgainLater, wantMsg: "waiting for a CIDR"},
		{name: "agent not reachable", cniArgs: k8sArgs1, wantCode: 11, wantMsg: "not reachable at "},
		{name: "agent answers garbage", cniArgs: k8sArgs1, wantSent: true,
			reply: &reply{status: http.StatusInternalServerError, raw: "panic: oops"}, wantCode: 999, wantMsg: "500"},
		{name: "agent answers undecodable 200", cniArgs: k8sArgs1, wantSent: true,
			reply: &reply{status: http.StatusOK, raw: "{"}, wantCode: 999, wantMsg: "cannot decode"},
		{name: "agent gives no address", cniArgs: k8sArgs1, wantSent: true,
			reply: &reply{status: http.StatusOK, body: v1.AddResponse{}}, wantCode: 999, wantMsg: "not usable"},
		{name: "agent gives a bad address", cniArgs: k8sArgs1, wantSent: true,
			reply: &reply{status: http.StatusOK, body: v1.AddResponse{IPs: []v1.IPConfig{{Address: "10.20.1.7"}}}}, wantCode: 999, wantMsg: "not usable"},

		// Configuration.
		{name: "unknown ipam key", ipam: `"sockett": "/x"`, cniArgs: k8sArgs1, reply: ok, wantCode: 2, wantMsg: "unsupported key"},
		{name: "two addresses in CNI 0.2.0", cniVersion: "0.2.0", cniArgs: k8sArgs1, reply: ok, wantSent: true,
			wantResult: `{"cniVersion": "0.2.0",
				"ip4": {"ip": "10.20.1.7/24", "gateway": "10.20.1.1", "routes": [{"dst": "0.0.0.0/0", "gw": "10.20.1.1"}]},
				"ip6": {"ip": "fd00:20:1::7/64", "gateway": "fd00:20:1::1", "routes": [{"dst": "::/0"}]}, "dns": {}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			agent := e.answering(t, v1.PathAdd, tc.reply)
			v := tc.cniVersion
			if v == "" {
				v = "1.1.0"
			}
			out, _, err := run(add, cmdArgs(e.conf(v, tc.ipam, ""), tc.cniArgs))
			checkErr(t, err, tc.wantCode, tc.wantMsg)
			if tc.wantResult != "" {
				sameJSON(t, out, tc.wantResult)
			} else if out != "" {
				t.Errorf("printed %q with an error", out)
			}
			if agent == nil {
				return
			}
			if !tc.wantSent {
				agent.none(t)
				return
			}
			var got v1.AddRequest
			agent.only(t, http.MethodPost, v1.PathAdd, &got)
			want := v1.AddRequest{
				Attachment: v1.Attachment{ContainerID: "ctr1", IfName: "eth0"},
				Netns:      "/var/run/netns/pod1",
				Network:    "podnet",
				Pod:        v1.PodRef{Namespace: "default", Name: "web-0", UID: "uid-1"},
				Bridge:     "cni0", // the bridge plugin's, from the network configuration
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("agent got %+v, want %+v", got, want)
			}
		})
	}
}

// TestAddDropsStaleDel: a DEL queued for the attachment while the agent was
// away is superseded by an ADD the agent has answered.
func TestAddDropsStaleDel(t *testing.T) {
	agent := startAgent(t, map[string]reply{v1.PathAdd: {status: http.StatusOK, body: v1.AddResponse{IPs: []v1.IPConfig{{Address: "10.20.1.7/24"}}}}})
	e := env{socket: agent.socket, stateDir: t.TempDir()}
	stale, err := queueDel(e.stateDir, v1.DelRequest{Attachment: v1.Attachment{ContainerID: "ctr1", IfName: "eth0"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := queueDel(e.stateDir, v1.DelRequest{Attachment: v1.Attachment{ContainerID: "ctr2", IfName: "eth0"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(add, cmdArgs(e.conf("1.1.0", "", ""), k8sArgs1)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("queued DEL of the added attachment still there (%v)", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("queued DEL of another attachment: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(e.stateDir, v1.PendingDelDir, "*")); len(m) != 1 {
		t.Errorf("queue holds %v", m)
	}
}
