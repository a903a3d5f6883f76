// Package memberlog sends memberlist's log lines to an agent's log. Both
// members elections (the DaemonSet's L2 one and the control-plane VIP's)
// use it.
package memberlog

import (
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Writer is memberlist's log output (memberlist.Config.Logger). Its lines
// go to the agent's log at debug level: its warnings about single lost
// packets are routine. But for packets that fail authentication: a peer
// with another secret is otherwise only silence, so that is said as a
// warning, with SecretHint saying which secret to compare, at most once
// every WarnEvery (beats arrive every 50 ms).
type Writer struct {
	Log        *slog.Logger
	SecretHint string

	mu       sync.Mutex
	lastWarn time.Time
}

// WarnEvery is how often a failing peer is warned of.
const WarnEvery = time.Minute

var _ io.Writer = (*Writer)(nil)

func (w *Writer) Write(b []byte) (int, error) {
	line := strings.TrimSpace(string(b))
	if strings.Contains(line, "Decrypt packet failed") && w.warnNow(time.Now()) {
		w.Log.Warn("Dropped a peer's packet that fails authentication: "+w.SecretHint, "error", line)
		return len(b), nil
	}
	w.Log.Debug(line, "component", "memberlist")
	return len(b), nil
}

func (w *Writer) warnNow(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.lastWarn.IsZero() && now.Sub(w.lastWarn) < WarnEvery {
		return false
	}
	w.lastWarn = now
	return true
}
