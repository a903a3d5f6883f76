package plugin

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

// prevResult is what bridge hands its IPAM plugin on CHECK: the result of
// the whole network, interfaces included.
const prevResult = `"prevResult": {"cniVersion": "1.1.0",
	"interfaces": [{"name": "cni0"}, {"name": "veth1"}, {"name": "eth0", "sandbox": "/var/run/netns/pod1"}],
	"ips": [{"address": "10.20.1.7/24", "gateway": "10.20.1.1", "interface": 2}, {"address": "fd00:20:1::7/64", "interface": 2}],
	"routes": [{"dst": "0.0.0.0/0", "gw": "10.20.1.1"}]}`

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		top      string // top-level keys of the configuration
		reply    *reply
		wantCode uint
		wantMsg  string
		wantSent bool
	}{
		{name: "holds", top: prevResult, reply: &reply{status: http.StatusOK, body: struct{}{}}, wantSent: true},
		{name: "agent disagrees", top: prevResult, wantSent: true,
			reply:    &reply{status: http.StatusConflict, body: v1.Error{Code: v1.CodeInvalidRequest, Msg: "ctr1/eth0 holds 10.20.1.8/24"}},
			wantCode: v1.CodeInvalidRequest, wantMsg: "holds 10.20.1.8/24"},
		{name: "no prevResult", reply: &reply{status: http.StatusOK, body: struct{}{}}, wantCode: 7, wantMsg: "prevResult"},
		{name: "agent not reachable", top: prevResult, wantCode: 11, wantMsg: "not reachable"},
		{name: "frozen agent", top: prevResult, wantSent: true, wantCode: 11, wantMsg: "not reachable",
			reply: &reply{status: http.StatusOK, body: struct{}{}, delay: time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shorten(t, &checkTimeout, 200*time.Millisecond)
			e := newEnv(t)
			agent := e.answering(t, v1.PathCheck, tc.reply)
			_, _, err := run(check, cmdArgs(e.conf("1.1.0", "", tc.top), k8sArgs1))
			checkErr(t, err, tc.wantCode, tc.wantMsg)
			if agent == nil {
				return
			}
			if !tc.wantSent {
				agent.none(t)
				return
			}
			var got v1.CheckRequest
			agent.only(t, http.MethodPost, v1.PathCheck, &got)
			want := v1.CheckRequest{
				Attachment: v1.Attachment{ContainerID: "ctr1", IfName: "eth0"},
				Pod:        v1.PodRef{Namespace: "default", Name: "web-0", UID: "uid-1"},
				IPs:        []string{"10.20.1.7/24", "fd00:20:1::7/64"},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("agent got %+v, want %+v", got, want)
			}
		})
	}
}

func TestGC(t *testing.T) {
	two := []v1.Attachment{{ContainerID: "ctr1", IfName: "eth0"}, {ContainerID: "ctr2", IfName: "net1"}}
	ok := &reply{status: http.StatusOK, body: struct{}{}}
	for _, tc := range []struct {
		name     string
		top      string
		reply    *reply
		wantCode uint
		wantMsg  string
		wantSent []v1.Attachment // nil: nothing sent
	}{
		{name: "valid attachments", reply: ok, wantSent: two,
			top: `"cni.dev/valid-attachments": [{"containerID": "ctr1", "ifname": "eth0"}, {"containerID": "ctr2", "ifname": "net1"}]`},
		{name: "as libcni sends them: both keys", reply: ok, wantSent: two[:1],
			top: `"cni.dev/valid-attachments": [{"containerID": "ctr1", "ifname": "eth0"}], "cni.dev/attachments": [{"containerID": "ctr1", "ifname": "eth0"}]`},
		{name: "CNI 1.1's misnamed key alone", reply: ok, wantSent: two,
			top: `"cni.dev/attachments": [{"containerID": "ctr1", "ifname": "eth0"}, {"containerID": "ctr2", "ifname": "net1"}]`},
		{name: "none valid: release everything", reply: ok, wantSent: []v1.Attachment{},
			top: `"cni.dev/valid-attachments": []`},
		{name: "no list: refused", reply: ok, wantCode: 7, wantMsg: "valid-attachments"},
		{name: "agent not reachable", top: `"cni.dev/valid-attachments": []`, wantCode: 11, wantMsg: "not reachable"},
		{name: "agent error passed on", top: `"cni.dev/valid-attachments": []`, wantSent: []v1.Attachment{},
			reply:    &reply{status: http.StatusInternalServerError, body: v1.Error{Code: v1.CodeIOFailure, Msg: "journal: disk full"}},
			wantCode: v1.CodeIOFailure, wantMsg: "disk full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			agent := e.answering(t, v1.PathGC, tc.reply)
			args := cmdArgs(e.conf("1.1.0", "", tc.top), "")
			args.ContainerID, args.IfName, args.Netns = "", "", "" // GC names no attachment
			_, _, err := run(gc, args)
			checkErr(t, err, tc.wantCode, tc.wantMsg)
			if agent == nil {
				return
			}
			if tc.wantSent == nil {
				agent.none(t)
				return
			}
			var got v1.GCRequest
			agent.only(t, http.MethodPost, v1.PathGC, &got)
			want := v1.GCRequest{Network: "podnet", ValidAttachments: tc.wantSent}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("agent got %+v, want %+v", got, want)
			}
			// An empty list goes as [], never null: the agent must not
			// have to guess.
			if body := string(agent.requests()[0].body); len(tc.wantSent) == 0 && !strings.Contains(body, `"validAttachments":[]`) {
				t.Errorf("body %s", body)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reply    *reply
		wantCode uint
		wantMsg  string
	}{
		{name: "ready", reply: &reply{status: http.StatusOK, body: v1.StatusResponse{Ready: true}}},
		{name: "not ready", reply: &reply{status: http.StatusOK, body: v1.StatusResponse{Message: "no CIDR of pool default for IPv4 yet"}},
			wantCode: 50, wantMsg: "no CIDR of pool default for IPv4 yet"},
		{name: "not ready, no message", reply: &reply{status: http.StatusOK, body: v1.StatusResponse{}},
			wantCode: 50, wantMsg: "not ready"},
		{name: "agent not reachable", wantCode: 50, wantMsg: "not reachable at "},
		{name: "frozen agent", reply: &reply{status: http.StatusOK, body: v1.StatusResponse{Ready: true}, delay: time.Hour},
			wantCode: 50, wantMsg: "not reachable at "},
		{name: "agent error becomes 50", reply: &reply{status: http.StatusServiceUnavailable, body: v1.Error{Code: v1.CodeTryAgainLater, Msg: "starting"}},
			wantCode: 50, wantMsg: "starting"},
		{name: "limited connectivity passed on", reply: &reply{status: http.StatusServiceUnavailable, body: v1.Error{Code: 51, Msg: "IPv6 pool exhausted"}},
			wantCode: 51, wantMsg: "IPv6 pool exhausted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shorten(t, &statusTimeout, 200*time.Millisecond)
			e := newEnv(t)
			agent := e.answering(t, v1.PathStatus, tc.reply)
			args := cmdArgs(e.conf("1.1.0", "", ""), "")
			args.ContainerID, args.IfName, args.Netns = "", "", ""
			_, _, err := run(status, args)
			checkErr(t, err, tc.wantCode, tc.wantMsg)
			if agent != nil {
				agent.only(t, http.MethodGet, v1.PathStatus, nil)
			}
		})
	}
}
