package plugin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"
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

// The methods of api/ipam/v1.
const (
	methodGet  = "GET"
	methodPost = "POST"
)

// client speaks api/ipam/v1 to the agent over its unix socket.
//
// It writes one HTTP/1.0 request per connection and reads the answer to
// the end of the connection, on the calling goroutine: the agent's
// net/http server answers HTTP/1.0 without chunking and closes the
// connection after it. The plugin runs once per ADD, and importing
// net/http's client (TLS, HTTP/2, proxies: about 80 packages to
// initialize) and its connection goroutines cost each run more than the
// request itself.
type client struct {
	socket string
}

func newClient(socket string) *client { return &client{socket: socket} }

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

	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return types.NewError(types.ErrInternal, "herald-ipam: cannot encode the request", err.Error())
		}
		body = b
	}
	status, b, err := c.roundTrip(ctx, method, path, body)
	if err != nil {
		return &unreachableError{socket: c.socket, err: fmt.Errorf("%s %s: %w", method, path, err)}
	}
	if status.code == 200 {
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
			fmt.Sprintf("herald-ipam: the agent answered %s %s with %s and no error", method, path, status.text),
			truncate(string(b), 512))
	}
	return types.NewError(e.Code, e.Msg, e.Details)
}

// roundTrip sends one request on a new connection and returns the answer's
// status and body. Any error means the agent gave no (whole) answer.
func (c *client) roundTrip(ctx context.Context, method, path string, body []byte) (answerStatus, []byte, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return answerStatus{}, nil, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(deadline); err != nil {
			return answerStatus{}, nil, err
		}
	}
	// The host is required by the server and otherwise ignored.
	req := fmt.Appendf(nil, "%s %s HTTP/1.0\r\nHost: herald-agent\r\n", method, path)
	if body != nil {
		req = fmt.Appendf(req, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	req = append(append(req, "\r\n"...), body...)
	if _, err := conn.Write(req); err != nil {
		return answerStatus{}, nil, err
	}
	return readAnswer(bufio.NewReader(conn))
}

// answerStatus is an answer's status line: 200 and "200 OK".
type answerStatus struct {
	code int
	text string
}

// readAnswer reads an HTTP/1.x answer to an HTTP/1.0 request: status line,
// headers, then the body, Content-Length bytes if the header is there and
// otherwise up to the end of the connection.
func readAnswer(r *bufio.Reader) (answerStatus, []byte, error) {
	tp := textproto.NewReader(r)
	line, err := tp.ReadLine()
	if err != nil {
		return answerStatus{}, nil, fmt.Errorf("reading the answer: %w", err)
	}
	proto, text, ok := strings.Cut(line, " ")
	code, cerr := strconv.Atoi(text[:min(3, len(text))])
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") || cerr != nil || code < 100 {
		return answerStatus{}, nil, fmt.Errorf("not an HTTP answer: %q", truncate(line, 64))
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		return answerStatus{}, nil, fmt.Errorf("reading the answer's headers: %w", err)
	}
	st := answerStatus{code: code, text: text}
	if te := hdr.Get("Transfer-Encoding"); te != "" {
		return st, nil, fmt.Errorf("answer with Transfer-Encoding %s to an HTTP/1.0 request", te)
	}
	body := io.LimitReader(r, maxAnswer)
	if cl := hdr.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil || n < 0 || n > maxAnswer {
			return st, nil, fmt.Errorf("answer with Content-Length %q", cl)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return st, nil, fmt.Errorf("reading the answer's body: %w", err)
		}
		return st, b, nil
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return st, nil, fmt.Errorf("reading the answer's body: %w", err)
	}
	return st, b, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
