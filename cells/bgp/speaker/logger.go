package speaker

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
)

// gobgpLogger sends GoBGP's log to the agent's, and remembers per
// neighbor the last thing that went wrong with its session (GoBGP's API
// has no "last error"; its log does: "failed to connect", notifications
// sent and received), which bgp-peers and the node status show.
type gobgpLogger struct {
	log *slog.Logger

	mu        sync.Mutex
	lastError map[string]string // by neighbor address
}

func newGoBGPLogger(log *slog.Logger) *gobgpLogger {
	return &gobgpLogger{log: log, lastError: map[string]string{}}
}

// LastError returns the last session problem of a neighbor, "" for none.
func (l *gobgpLogger) LastError(neighbor string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastError[neighbor]
}

// Forget drops a neighbor's last error (it was deconfigured, or its
// session came up).
func (l *gobgpLogger) Forget(neighbor string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.lastError, neighbor)
}

// Record sets a neighbor's last error from outside GoBGP (BFD).
func (l *gobgpLogger) Record(neighbor, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastError[neighbor] = text
}

func (l *gobgpLogger) note(msg string, fields gobgplog.Fields) {
	key, _ := fields["Key"].(string)
	if key == "" {
		return
	}
	lower := strings.ToLower(msg)
	if !strings.Contains(lower, "fail") && !strings.Contains(lower, "notification") && !strings.Contains(lower, "error") &&
		!strings.Contains(lower, "hold timer expired") && fields["Error"] == nil {
		return
	}
	text := msg
	if e, ok := fields["Error"]; ok && e != nil {
		text += ": " + fmt.Sprint(e)
	}
	for _, k := range []string{"Code", "Subcode", "Data"} {
		if v, ok := fields[k]; ok {
			text += fmt.Sprintf(" %s=%v", strings.ToLower(k), v)
		}
	}
	l.mu.Lock()
	l.lastError[key] = text
	l.mu.Unlock()
}

func (l *gobgpLogger) emit(level slog.Level, msg string, fields gobgplog.Fields) {
	l.note(msg, fields)
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, strings.ToLower(k), fields[k])
	}
	l.log.Log(context.Background(), level, "GoBGP: "+msg, args...)
}

func (l *gobgpLogger) Panic(msg string, fields gobgplog.Fields) {
	l.emit(slog.LevelError, msg, fields)
	panic(msg)
}
func (l *gobgpLogger) Fatal(msg string, fields gobgplog.Fields) {
	// GoBGP calls Fatal for errors it cannot go on after; the agent must
	// not exit from inside a library, so it logs and lets the speaker's
	// health say the rest.
	l.emit(slog.LevelError, msg, fields)
}
func (l *gobgpLogger) Error(msg string, fields gobgplog.Fields) { l.emit(slog.LevelError, msg, fields) }
func (l *gobgpLogger) Warn(msg string, fields gobgplog.Fields)  { l.emit(slog.LevelWarn, msg, fields) }
func (l *gobgpLogger) Info(msg string, fields gobgplog.Fields)  { l.emit(slog.LevelInfo, msg, fields) }

// Debug: GoBGP reports failed connection attempts at debug level only;
// they are kept as the neighbor's last error and logged at debug.
func (l *gobgpLogger) Debug(msg string, fields gobgplog.Fields) { l.emit(slog.LevelDebug, msg, fields) }

func (l *gobgpLogger) SetLevel(gobgplog.LogLevel) {}

// GetLevel is debug so that GoBGP hands over connection failures.
func (l *gobgpLogger) GetLevel() gobgplog.LogLevel { return gobgplog.DebugLevel }
