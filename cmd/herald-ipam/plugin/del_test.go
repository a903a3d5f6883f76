package plugin

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

func TestDel(t *testing.T) {
	pod := v1.PodRef{Namespace: "default", Name: "web-0", UID: "uid-1"}
	want := v1.DelRequest{Attachment: v1.Attachment{ContainerID: "ctr1", IfName: "eth0"}, Pod: pod}
	noPod := v1.DelRequest{Attachment: want.Attachment}

	for _, tc := range []struct {
		name      string
		cniArgs   string
		noNetns   bool
		reply     *reply // nil: no agent
		stateFile bool   // the state directory is a file: nothing can be queued
		wantCode  uint
		wantMsg   string
		wantSent  *v1.DelRequest // what the agent got
		wantQueue *v1.DelRequest // what was queued
	}{
		{name: "agent releases", cniArgs: k8sArgs1, reply: &reply{status: http.StatusOK, body: struct{}{}}, wantSent: &want},
		{name: "netns gone", cniArgs: k8sArgs1, noNetns: true, reply: &reply{status: http.StatusOK, body: struct{}{}}, wantSent: &want},
		{name: "no CNI_ARGS", reply: &reply{status: http.StatusOK, body: struct{}{}}, wantSent: &noPod},
		{name: "unreadable CNI_ARGS do not block a DEL", cniArgs: "FOO=bar;K8S_POD_NAME=web-0",
			reply: &reply{status: http.StatusOK, body: struct{}{}}, wantSent: &noPod},
		{name: "agent error passed on", cniArgs: k8sArgs1, wantSent: &want,
			reply:    &reply{status: http.StatusInternalServerError, body: v1.Error{Code: v1.CodeIOFailure, Msg: "journal: disk full"}},
			wantCode: v1.CodeIOFailure, wantMsg: "journal: disk full"},
		{name: "no agent: queued", cniArgs: k8sArgs1, wantQueue: &want},
		{name: "no agent, netns gone: queued", cniArgs: k8sArgs1, noNetns: true, wantQueue: &want},
		{name: "frozen agent: queued", cniArgs: k8sArgs1, wantSent: &want, wantQueue: &want,
			reply: &reply{status: http.StatusOK, body: struct{}{}, delay: time.Hour}},
		{name: "no agent, nowhere to queue", cniArgs: k8sArgs1, stateFile: true, wantCode: 5, wantMsg: "cannot be queued"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shorten(t, &delTimeout, 200*time.Millisecond)
			e := newEnv(t)
			agent := e.answering(t, v1.PathDel, tc.reply)
			if tc.stateFile {
				e.stateDir = filepath.Join(t.TempDir(), "file")
				if err := os.WriteFile(e.stateDir, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args := cmdArgs(e.conf("1.1.0", "", ""), tc.cniArgs)
			if tc.noNetns {
				args.Netns = ""
			}
			// Twice: DEL is idempotent, queued or not.
			for i := range 2 {
				_, stderr, err := run(del, args)
				checkErr(t, err, tc.wantCode, tc.wantMsg)
				if tc.wantQueue != nil && !strings.Contains(stderr, "queued") {
					t.Errorf("run %d: stderr %q says nothing of the queued DEL", i, stderr)
				}
			}

			if agent != nil {
				reqs := agent.requests()
				if tc.wantSent == nil && len(reqs) != 0 {
					t.Errorf("agent got %+v", reqs)
				}
				for _, r := range reqs {
					var got v1.DelRequest
					if r.method != http.MethodPost || r.path != v1.PathDel || json.Unmarshal(r.body, &got) != nil || !reflect.DeepEqual(got, *tc.wantSent) {
						t.Errorf("agent got %s %s %s, want POST %s %+v", r.method, r.path, r.body, v1.PathDel, *tc.wantSent)
					}
				}
			}
			checkQueue(t, e.stateDir, tc.wantQueue)
		})
	}
}

// TestDelDropsQueued: a DEL the agent answers makes a queued copy moot.
func TestDelDropsQueued(t *testing.T) {
	e := newEnv(t)
	req := v1.DelRequest{Attachment: v1.Attachment{ContainerID: "ctr1", IfName: "eth0"}}
	if _, _, err := run(del, cmdArgs(e.conf("1.1.0", "", ""), "")); err != nil {
		t.Fatal(err)
	}
	checkQueue(t, e.stateDir, &req)
	agent := startAgent(t, nil)
	e.socket = agent.socket
	if _, _, err := run(del, cmdArgs(e.conf("1.1.0", "", ""), "")); err != nil {
		t.Fatal(err)
	}
	agent.only(t, http.MethodPost, v1.PathDel, nil)
	checkQueue(t, e.stateDir, nil)
}

// checkQueue checks that the pending-del directory holds exactly want (or
// nothing), under its documented name, and no temporary file.
func checkQueue(t *testing.T, stateDir string, want *v1.DelRequest) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(stateDir, v1.PendingDelDir))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want == nil {
		if len(names) != 0 {
			t.Errorf("queue holds %v, want nothing", names)
		}
		return
	}
	name := want.ContainerID + "_" + want.IfName + ".json"
	if !reflect.DeepEqual(names, []string{name}) {
		t.Fatalf("queue holds %v, want [%s]", names, name)
	}
	b, err := os.ReadFile(filepath.Join(stateDir, v1.PendingDelDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var got v1.DelRequest
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(got, *want) {
		t.Errorf("queued %+v, want %+v", got, *want)
	}
}

// shorten sets a timeout for the test.
func shorten(t *testing.T, d *time.Duration, to time.Duration) {
	old := *d
	*d = to
	t.Cleanup(func() { *d = old })
}
