package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
)

// How long each verb waits for the agent. An ADD on a node whose CIDRs are
// used up waits while the agent asks for a new one (up to about 30 s), so it
// gets twice that. A DEL that times out is queued like one the agent never
// saw (DELs are idempotent), so it does not need to wait long. STATUS is
// polled by the runtime and must answer quickly. Variables only so that
// tests can freeze an agent without waiting this long.
var (
	addTimeout    = 60 * time.Second
	delTimeout    = 10 * time.Second
	checkTimeout  = 10 * time.Second
	gcTimeout     = 60 * time.Second
	statusTimeout = 5 * time.Second
)

// maxAnswer bounds what is read from the agent: its answers are a few
// hundred bytes.
const maxAnswer = 1 << 20

// client speaks api/ipam/v1 to the agent over its unix socket.
type client struct {
	socket string
	http   *http.Client
}

func newClient(socket string) *client {
	return &client{
		socket: socket,
		http: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", socket)
			},
			// One request per plugin run.
			DisableKeepAlives: true,
		}},
	}
}

// unreachableError says the agent gave no answer: no socket, nobody
// listening, the connection broke or the time ran out. Whether the agent
// acted on the request is unknown.
type unreachableError struct {
	socket string
	err    error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("herald agent not reachable at %s: %v", e.socket, e.err)
}

func (e *unreachableError) Unwrap() error { return e.err }

// call sends in (nil for none) to the agent and decodes a 200 answer into out
// (nil to ignore it). It returns an *unreachableError when the agent does not
// answer, the agent's v1.Error as a *types.Error with the same code, message
// and details, or a *types.Error 999 for an answer that is not the protocol.
func (c *client) call(ctx context.Context, timeout time.Duration, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return types.NewError(types.ErrInternal, "herald-ipam: cannot encode the request", err.Error())
		}
		body = bytes.NewReader(b)
	}
	// The host part is ignored: the transport always dials the socket.
	req, err := http.NewRequestWithContext(ctx, method, "http://herald-agent"+path, body)
	if err != nil {
		return types.NewError(types.ErrInternal, "herald-ipam: cannot build the request", err.Error())
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &unreachableError{socket: c.socket, err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return &unreachableError{socket: c.socket, err: fmt.Errorf("reading the answer to %s %s: %w", method, path, err)}
	}

	if resp.StatusCode == http.StatusOK {
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(b, out); err != nil {
			return types.NewError(types.ErrInternal,
				fmt.Sprintf("herald-ipam: cannot decode the agent's answer to %s %s", method, path), err.Error())
		}
		return nil
	}
	var e v1.Error
	if err := json.Unmarshal(b, &e); err != nil || e.Code == 0 || e.Msg == "" {
		return types.NewError(types.ErrInternal,
			fmt.Sprintf("herald-ipam: the agent answered %s %s with %s and no error", method, path, resp.Status),
			truncate(string(b), 512))
	}
	return types.NewError(e.Code, e.Msg, e.Details)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
