package cnitest_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

// The fake agent's subnet: pods get .10 upwards, the gateway (the bridge,
// isGateway) is .1.
const (
	fakeSubnet  = "198.18.200.0/24"
	fakeGateway = "198.18.200.1"
)

// fakeAgent speaks api/ipam/v1 like the agent, but hands out addresses of
// one fixed subnet and keeps them in memory. It records every request.
type fakeAgent struct {
	socket string
	srv    *http.Server
	done   chan struct{}

	mu      sync.Mutex
	ready   bool
	message string
	next    int
	held    map[v1.Attachment]string // address with prefix length
	adds    []v1.AddRequest
	dels    []v1.DelRequest
	checks  []v1.CheckRequest
	gcs     []v1.GCRequest
}

// startFakeAgent serves on socket until stop.
func startFakeAgent(t *testing.T, socket string, ready bool, message string) *fakeAgent {
	t.Helper()
	a := &fakeAgent{socket: socket, ready: ready, message: message, next: 10, held: map[v1.Attachment]string{}, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+v1.PathAdd, recorded(a, &a.adds, a.add))
	mux.HandleFunc("POST "+v1.PathDel, recorded(a, &a.dels, a.del))
	mux.HandleFunc("POST "+v1.PathCheck, recorded(a, &a.checks, a.check))
	mux.HandleFunc("POST "+v1.PathGC, recorded(a, &a.gcs, a.gc))
	mux.HandleFunc("GET "+v1.PathStatus, a.status)
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	a.srv = &http.Server{Handler: mux}
	go func() {
		defer close(a.done)
		a.srv.Serve(l)
	}()
	t.Cleanup(a.stop)
	return a
}

// stop closes the socket (and removes its file): the agent is gone.
func (a *fakeAgent) stop() {
	a.srv.Close()
	<-a.done
}

func decode[T any](w http.ResponseWriter, r *http.Request) (T, bool) {
	var req T
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		fail(w, http.StatusBadRequest, v1.CodeInvalidRequest, err.Error())
		return req, false
	}
	return req, true
}

func fail(w http.ResponseWriter, status int, code uint, msg string) {
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v1.Error{Code: code, Msg: msg})
}

func answer(w http.ResponseWriter, v any) { json.NewEncoder(w).Encode(v) }

// recorded decodes a request of type T, records it in log and has serve
// answer it, with the agent's lock held throughout.
func recorded[T any](a *fakeAgent, log *[]T, serve func(http.ResponseWriter, T)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, ok := decode[T](w, r)
		if !ok {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		*log = append(*log, req)
		serve(w, req)
	}
}

func (a *fakeAgent) add(w http.ResponseWriter, req v1.AddRequest) {
	addr, ok := a.held[req.Attachment]
	if !ok {
		if a.next > 254 {
			fail(w, http.StatusConflict, v1.CodePoolExhausted, "fake agent: "+fakeSubnet+" is exhausted")
			return
		}
		addr = fmt.Sprintf("198.18.200.%d/24", a.next)
		a.next++
		a.held[req.Attachment] = addr
	}
	answer(w, v1.AddResponse{
		IPs:    []v1.IPConfig{{Address: addr, Gateway: fakeGateway, Pool: "default"}},
		Routes: []v1.Route{{Dst: "0.0.0.0/0", GW: fakeGateway}},
	})
}

func (a *fakeAgent) del(w http.ResponseWriter, req v1.DelRequest) {
	delete(a.held, req.Attachment)
	answer(w, struct{}{})
}

func (a *fakeAgent) check(w http.ResponseWriter, req v1.CheckRequest) {
	if addr, ok := a.held[req.Attachment]; !ok || !slices.Equal(req.IPs, []string{addr}) {
		fail(w, http.StatusConflict, v1.CodeInvalidRequest, fmt.Sprintf("fake agent: %v holds %q, not %v", req.Attachment, addr, req.IPs))
		return
	}
	answer(w, struct{}{})
}

func (a *fakeAgent) gc(w http.ResponseWriter, req v1.GCRequest) {
	for att := range a.held {
		if !slices.Contains(req.ValidAttachments, att) {
			delete(a.held, att)
		}
	}
	answer(w, struct{}{})
}

func (a *fakeAgent) status(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	answer(w, v1.StatusResponse{Ready: a.ready, Message: a.message})
}

// seen returns copies of what the agent was sent.
func (a *fakeAgent) seen() (adds []v1.AddRequest, dels []v1.DelRequest, checks []v1.CheckRequest, gcs []v1.GCRequest) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.adds), slices.Clone(a.dels), slices.Clone(a.checks), slices.Clone(a.gcs)
}

// holds returns the address of an attachment.
func (a *fakeAgent) holds(att v1.Attachment) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	addr, ok := a.held[att]
	return addr, ok
}
