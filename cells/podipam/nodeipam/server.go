package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

// server serves the herald-ipam plugin on the unix socket.
type server struct {
	agent *agent
	http  *http.Server
}

func (s *server) start() error {
	path := s.agent.Config.IPAMSocket
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	_ = os.Remove(path) // left by a previous run
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("ipam-socket %s: %w", path, err)
	}
	mux := http.NewServeMux()
	m := s.agent.metrics
	mux.HandleFunc("POST "+ipamv1.PathAdd, m.instrument("add", s.add))
	mux.HandleFunc("POST "+ipamv1.PathDel, m.instrument("del", s.del))
	mux.HandleFunc("POST "+ipamv1.PathCheck, m.instrument("check", s.check))
	mux.HandleFunc("POST "+ipamv1.PathGC, m.instrument("gc", s.gc))
	mux.HandleFunc("GET "+ipamv1.PathStatus, m.instrument("status", s.status))
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.agent.Log.Error("The herald-ipam socket stopped serving", "socket", path, "error", err)
		}
	}()
	s.agent.Log.Info("Serving the herald-ipam CNI plugin", "socket", path)
	return nil
}

func (s *server) stop(ctx context.Context) error {
	if s.http == nil {
		return nil
	}
	return s.http.Shutdown(ctx)
}

// reply writes a JSON answer; an *apiError becomes its CNI error body.
func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		errorCode(w, err)
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = &apiError{status: http.StatusInternalServerError, body: ipamv1.Error{Code: ipamv1.CodeIOFailure, Msg: err.Error()}}
		}
		w.WriteHeader(ae.status)
		_ = json.NewEncoder(w).Encode(ae.body)
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is an error with the CNI code the plugin passes on.
type apiError struct {
	status int
	body   ipamv1.Error
}

func (e *apiError) Error() string { return e.body.Msg }

func cniError(status int, code uint, format string, args ...any) error {
	return &apiError{status: status, body: ipamv1.Error{Code: code, Msg: fmt.Sprintf(format, args...)}}
}

func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return cniError(http.StatusBadRequest, ipamv1.CodeInvalidRequest, "malformed request: %v", err)
	}
	return nil
}

func (s *server) add(w http.ResponseWriter, r *http.Request) {
	var req ipamv1.AddRequest
	if err := decode(r, &req); err != nil {
		reply(w, nil, err)
		return
	}
	resp, err := s.agent.add(r.Context(), req)
	reply(w, resp, err)
}

func (s *server) del(w http.ResponseWriter, r *http.Request) {
	var req ipamv1.DelRequest
	if err := decode(r, &req); err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, struct{}{}, s.agent.del(req))
}

func (s *server) check(w http.ResponseWriter, r *http.Request) {
	var req ipamv1.CheckRequest
	if err := decode(r, &req); err != nil {
		reply(w, nil, err)
		return
	}
	var ips []netip.Addr
	for _, s := range req.IPs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			reply(w, nil, cniError(http.StatusBadRequest, ipamv1.CodeInvalidRequest, "address %q: %v", s, err))
			return
		}
		ips = append(ips, p.Addr())
	}
	s.agent.mu.Lock()
	err := s.agent.state.check(req.Attachment, ips)
	s.agent.mu.Unlock()
	if err != nil {
		err = cniError(http.StatusConflict, ipamv1.CodeInvalidRequest, "%v", err)
	}
	reply(w, struct{}{}, err)
}

func (s *server) gc(w http.ResponseWriter, r *http.Request) {
	var req ipamv1.GCRequest
	if err := decode(r, &req); err != nil {
		reply(w, nil, err)
		return
	}
	s.agent.mu.Lock()
	released, err := s.agent.state.gc(req.Network, req.ValidAttachments)
	s.agent.publishLocked(nil, released)
	s.agent.mu.Unlock()
	s.agent.dropGateways()
	for _, e := range released {
		s.agent.Log.Info("Released an address the runtime no longer knows (CNI GC)", "ip", e.IP, "pod", e.Pod.Namespace+"/"+e.Pod.Name, "container", e.ContainerID)
	}
	if len(released) > 0 {
		s.agent.poke()
	}
	reply(w, struct{}{}, err)
}

func (s *server) status(w http.ResponseWriter, _ *http.Request) {
	s.agent.mu.Lock()
	ok, msg := s.agent.state.ready()
	s.agent.mu.Unlock()
	reply(w, ipamv1.StatusResponse{Ready: ok, Message: msg}, nil)
}

// add resolves the pod's pools (from the tables: no API call when the node
// has room), allocates, and waits for a CIDR when the node is full.
func (a *agent) add(ctx context.Context, req ipamv1.AddRequest) (*ipamv1.AddResponse, error) {
	if req.ContainerID == "" || req.IfName == "" {
		return nil, cniError(http.StatusBadRequest, ipamv1.CodeInvalidRequest, "ADD without a container ID or interface name")
	}
	if req.Pod.Namespace == "" || req.Pod.Name == "" {
		return nil, cniError(http.StatusBadRequest, ipamv1.CodeInvalidEnvironment, "ADD without K8S_POD_NAMESPACE and K8S_POD_NAME in CNI_ARGS: Herald chooses the pool by the Pod")
	}
	pools, err := a.choosePools(ctx, req.Pod)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	err = a.dropQueuedDel(req.Attachment)
	a.mu.Unlock()
	if err != nil {
		return nil, cniError(http.StatusInternalServerError, ipamv1.CodeIOFailure, "removing a DEL of %s/%s queued before this ADD: %v", req.ContainerID, req.IfName, err)
	}
	deadline := time.Now().Add(addWait)
	for {
		a.mu.Lock()
		got, err := a.state.add(req, pools)
		changed := a.state.changed
		if err == nil {
			a.publishLocked(got, nil)
		}
		a.mu.Unlock()
		switch {
		case err == nil:
			a.poke()
			var cidrs []netip.Prefix
			for _, e := range got {
				cidrs = append(cidrs, e.CIDR)
			}
			if err := a.ensureGateways(req.Bridge, cidrs); err != nil {
				// The pod could not reach its gateway: fail the ADD (the
				// runtime DELs it, which releases the address).
				return nil, cniError(http.StatusInternalServerError, ipamv1.CodeIOFailure, "%v", err)
			}
			return response(got), nil
		case !errors.Is(err, errNoRoom):
			var sf *shortfallError
			if errors.As(err, &sf) {
				return nil, a.refuse(req.Pod, sf)
			}
			return nil, err
		}
		// The demand now includes this ADD: the node asks for more.
		a.poke()
		select {
		case <-ctx.Done():
			return nil, cniError(http.StatusServiceUnavailable, ipamv1.CodeTryAgainLater, "ADD cancelled while waiting for a pod CIDR: %v", ctx.Err())
		case <-changed:
			continue
		case <-time.After(time.Until(deadline)):
		}
		msg := fmt.Sprintf("%v: no CIDR came from the allocator within %s", err, addWait)
		if cn, _, ok := a.CiliumNodes.Get(a.DB.ReadTxn(), tables.CiliumNodeNameIndex.Query(a.node)); ok && cn.OperatorError != "" {
			msg += " (CiliumNode " + a.node + ": " + cn.OperatorError + ")"
		}
		a.podEvent(req.Pod, "Warning", EventPoolExhausted, msg)
		return nil, cniError(http.StatusServiceUnavailable, ipamv1.CodePoolExhausted, "%s", msg)
	}
}

// refuse answers an ADD the allocator cannot serve, with the code and Pod
// Event of its reason.
func (a *agent) refuse(pod ipamv1.PodRef, sf *shortfallError) error {
	code, reason := refusal(sf.Cause)
	msg := fmt.Sprintf("%v (CiliumNode %s)", sf, a.node)
	a.podEvent(pod, "Warning", reason, msg)
	return cniError(http.StatusServiceUnavailable, code, "%s", msg)
}

// refusal is the CNI code and Pod Event reason of a shortfall's cause.
func refusal(cause tables.ShortfallCause) (code uint, reason string) {
	switch cause {
	case tables.ShortfallConflict:
		return ipamv1.CodePoolConflict, EventPoolConflict
	case tables.ShortfallDeleting:
		return ipamv1.CodePoolDeleting, EventPoolDeleting
	case tables.ShortfallMaskSize:
		return ipamv1.CodePoolMaskSize, EventPoolMaskSize
	}
	return ipamv1.CodePoolExhausted, EventPoolExhausted
}

func response(got []entry) *ipamv1.AddResponse {
	resp := &ipamv1.AddResponse{}
	for _, e := range got {
		gw := tables.PodCIDRGateway(e.CIDR)
		resp.IPs = append(resp.IPs, ipamv1.IPConfig{
			Address: netip.PrefixFrom(e.IP, e.CIDR.Bits()).String(), Gateway: gw.String(), Pool: e.Pool,
		})
		dst := "0.0.0.0/0"
		if e.IP.Is6() {
			dst = "::/0"
		}
		resp.Routes = append(resp.Routes, ipamv1.Route{Dst: dst, GW: gw.String()})
	}
	return resp
}

// del releases an attachment's addresses; unknown attachments are fine.
func (a *agent) del(req ipamv1.DelRequest) error {
	a.mu.Lock()
	released, err := a.state.del(req.Attachment)
	a.publishLocked(nil, released)
	a.mu.Unlock()
	a.dropGateways()
	if len(released) > 0 {
		a.poke()
	}
	return err
}
