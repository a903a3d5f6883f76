package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
)

// The agent serves hive's shell on its debug socket: herald-dbg sends one
// command line, then "exit", and reads the answer until the connection
// closes. The answer is "[stdout]" and the command's output (nothing when
// it printed nothing), then the marker "<<end>>"; or, when the command
// failed, the error followed by "<<error>>".
const (
	stdoutMarker = "[stdout]\n"
	endMarker    = "<<end>>\n"
	errorMarker  = "<<error>>\n"
)

// remoteError is a command's own failure, reported by the agent.
type remoteError struct{ msg string }

func (e remoteError) Error() string { return e.msg }

// agentExec runs one command of the agent's shell and returns its output.
// Flags among args are single words (--output=json). An error from the
// command is a remoteError; any other error is about reaching the agent.
func agentExec(ctx context.Context, name string, args ...string) ([]byte, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	line, err := shellLine(args)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(conn, name+line+"\nexit\n"); err != nil {
		return nil, err
	}
	answer, err := io.ReadAll(conn)
	if err != nil && ctx.Err() == nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	switch {
	case bytes.HasSuffix(answer, []byte(endMarker)):
		out := bytes.TrimSuffix(answer, []byte(endMarker))
		if bytes.HasPrefix(out, []byte("PANIC: ")) {
			return nil, remoteError{strings.TrimSpace(string(out))}
		}
		return bytes.TrimPrefix(out, []byte(stdoutMarker)), nil
	case bytes.HasSuffix(answer, []byte(errorMarker)):
		msg := strings.TrimSuffix(string(answer), errorMarker)
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:] // what the command logged before it failed
		}
		return nil, remoteError{commandError(msg, name, args)}
	default:
		return nil, errors.New("the agent closed the connection before it answered")
	}
}

// shellLine quotes args for the shell, each after a space: in single
// quotes, a quote doubled, so that the shell expands nothing.
func shellLine(args []string) (string, error) {
	var b strings.Builder
	for _, a := range args {
		if strings.ContainsAny(a, "\r\n") {
			return "", fmt.Errorf("%q: an argument cannot span lines", a)
		}
		b.WriteString(" '" + strings.ReplaceAll(a, "'", "''") + "'")
	}
	return b.String(), nil
}

// commandError strips what the shell puts before a command's error:
// "<stdin>:0: NAME ARGS: ", ARGS being the arguments but flags, each
// quoted if it holds a quote or a separator.
func commandError(msg, name string, args []string) string {
	prefix := "<stdin>:0: " + name
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if strings.ContainsAny(a, "' \t#") {
			a = "'" + strings.ReplaceAll(a, "'", "''") + "'"
		}
		prefix += " " + a
	}
	return strings.TrimPrefix(msg, prefix+": ")
}
