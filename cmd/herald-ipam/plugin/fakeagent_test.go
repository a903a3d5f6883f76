package plugin

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
)

// fakeAgent is the agent's side of api/ipam/v1 on a unix socket: it records
// every request and answers each path as told.
type fakeAgent struct {
	socket string
	srv    *httptest.Server

	mu      sync.Mutex
	reqs    []request
	replies map[string]reply
}

type request struct {
	method, path string
	body         []byte
}

// reply is the answer to one path: a status and a body encoded as JSON,
// or raw bytes as they are; after a delay.
type reply struct {
	status int
	body   any
	raw    string
	delay  time.Duration
}

// socketDir is a short temporary directory: a unix socket path must fit in
// 108 bytes, which t.TempDir() under a long subtest name does not.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hipam-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startAgent serves replies on a new socket until the test ends.
func startAgent(t *testing.T, replies map[string]reply) *fakeAgent {
	t.Helper()
	a := &fakeAgent{socket: filepath.Join(socketDir(t), "ipam.sock"), replies: replies}
	l, err := net.Listen("unix", a.socket)
	if err != nil {
		t.Fatal(err)
	}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.srv.Listener.Close()
	a.srv.Listener = l
	a.srv.Start()
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAgent) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.reqs = append(a.reqs, request{r.Method, r.URL.Path, body})
	rep, ok := a.replies[r.URL.Path]
	a.mu.Unlock()
	if !ok {
		rep = reply{status: http.StatusOK, body: struct{}{}}
	}
	if rep.delay > 0 {
		select {
		case <-time.After(rep.delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	if rep.raw != "" {
		io.WriteString(w, rep.raw)
		return
	}
	json.NewEncoder(w).Encode(rep.body)
}

// requests returns what the agent was sent.
func (a *fakeAgent) requests() []request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]request(nil), a.reqs...)
}

// none fails the test if the agent got any request.
func (a *fakeAgent) none(t *testing.T) {
	t.Helper()
	if reqs := a.requests(); len(reqs) != 0 {
		t.Errorf("agent got %+v, want nothing", reqs)
	}
}

// only returns the one request the agent got, decoded into out.
func (a *fakeAgent) only(t *testing.T, method, path string, out any) {
	t.Helper()
	reqs := a.requests()
	if len(reqs) != 1 {
		t.Fatalf("agent got %d requests, want 1: %+v", len(reqs), reqs)
	}
	if reqs[0].method != method || reqs[0].path != path {
		t.Fatalf("agent got %s %s, want %s %s", reqs[0].method, reqs[0].path, method, path)
	}
	if out == nil {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(reqs[0].body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s body %s: %v", path, reqs[0].body, err)
	}
}

// env is one plugin run's environment: the agent's socket (absent when
// there is no agent), the state directory, CNI_ARGS.
type env struct {
	socket, stateDir string
}

// newEnv is an environment with no agent yet.
func newEnv(t *testing.T) env {
	return env{socket: filepath.Join(socketDir(t), "ipam.sock"), stateDir: t.TempDir()}
}

// answering starts a fake agent that answers path with r and points e at
// its socket. With no reply there is no agent (nil): nothing listens on
// e.socket.
func (e *env) answering(t *testing.T, path string, r *reply) *fakeAgent {
	t.Helper()
	if r == nil {
		return nil
	}
	a := startAgent(t, map[string]reply{path: *r})
	e.socket = a.socket
	return a
}

// conf is a network configuration as bridge passes it on, with the ipam
// section's socket and stateDir pointing at the test's; extra is spliced
// into the ipam section, top into the top level.
func (e env) conf(cniVersion, extra, top string) []byte {
	ipam := `"type": "herald-ipam", "socket": "` + e.socket + `", "stateDir": "` + e.stateDir + `"`
	if extra != "" {
		ipam += ", " + extra
	}
	s := `{"cniVersion": "` + cniVersion + `", "name": "podnet", "type": "bridge", "bridge": "cni0", "isGateway": true, "ipam": {` + ipam + `}`
	if top != "" {
		s += ", " + top
	}
	return []byte(s + "}")
}

const k8sArgs1 = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=ctr1;K8S_POD_UID=uid-1"

func cmdArgs(conf []byte, cniArgs string) *skel.CmdArgs {
	return &skel.CmdArgs{
		ContainerID: "ctr1",
		Netns:       "/var/run/netns/pod1",
		IfName:      "eth0",
		Args:        cniArgs,
		Path:        "/opt/cni/bin",
		StdinData:   conf,
	}
}
