// Package statusstub stands in for the API server's status subresource of
// one object, for unit tests of the status writers (cells/lbipam/servicestatus,
// cells/lbipam/poolstatus): it records every PATCH that reaches it, refuses one
// whose metadata.resourceVersion is not the object's current one with a
// 409 Conflict as the API server does, and can hold requests until the
// client abandons them. The writers talk to it through a real client-go
// client over HTTP, so what it records is what would have gone out.
//
// The real API server's side of the precondition is tested against a
// real kube-apiserver in test/lbipam (TestStatusApplyIsConditional).
package statusstub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Request is one PATCH the stub received.
type Request struct {
	ContentType string
	// ResourceVersion is the body's metadata.resourceVersion: the version
	// the writer made its write conditional on ("" = unconditional).
	ResourceVersion string
	Body            map[string]any
}

// Server serves PATCH requests on one path.
type Server struct {
	srv     *httptest.Server
	path    string
	respond func(resourceVersion string) any

	mu        sync.Mutex
	rv        int
	requests  []Request
	hold      bool
	abandoned chan Request
}

// New starts a stub for the status subresource at path (e.g.
// /api/v1/namespaces/ns/services/name/status) of an object at
// resourceVersion rv. respond renders the object returned on success, at
// its new resourceVersion. The server stops with the test.
func New(t testing.TB, path string, rv int, respond func(resourceVersion string) any) *Server {
	s := &Server{path: path, rv: rv, respond: respond, abandoned: make(chan Request, 16)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// Config is a client configuration for the stub, without client-side rate
// limiting.
func (s *Server) Config() *rest.Config {
	return &rest.Config{Host: s.srv.URL, QPS: 1000, Burst: 1000}
}

// Hold makes the stub keep every further request open without answering
// until the client gives up on it; see Abandoned.
func (s *Server) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = true
}

// Abandoned receives each held request once its client gave up on it.
func (s *Server) Abandoned() <-chan Request { return s.abandoned }

// Requests returns the PATCH requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPatch || r.URL.Path != s.path {
		http.Error(w, fmt.Sprintf("statusstub: unexpected %s %s", r.Method, r.URL.Path), http.StatusNotFound)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Apply patches are YAML by content type; client-go sends JSON, which
	// is YAML too.
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, "statusstub: body is no JSON object: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{ContentType: r.Header.Get("Content-Type"), Body: body}
	if meta, ok := body["metadata"].(map[string]any); ok {
		req.ResourceVersion, _ = meta["resourceVersion"].(string)
	}

	s.mu.Lock()
	s.requests = append(s.requests, req)
	hold := s.hold
	s.mu.Unlock()
	if hold {
		<-r.Context().Done()
		s.abandoned <- req
		return
	}

	s.mu.Lock()
	current := strconv.Itoa(s.rv)
	ok := req.ResourceVersion == "" || req.ResourceVersion == current
	if ok {
		s.rv++
		current = strconv.Itoa(s.rv)
	}
	s.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(&metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure, Code: http.StatusConflict, Reason: metav1.StatusReasonConflict,
			Message: "the object has been modified; please apply your changes to the latest version and try again",
		})
		return
	}
	_ = json.NewEncoder(w).Encode(s.respond(current))
}
