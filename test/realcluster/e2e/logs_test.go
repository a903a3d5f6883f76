package e2e

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// agentLog collects an agent container's log as it is written, until the
// container ends: the lines of an agent whose Pod is then deleted, which
// kubectl logs can no longer show.
type agentLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func followAgentLog(t *testing.T, pod string) *agentLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	none := int64(0) // only what comes from now on
	rc, err := cl.Client.CoreV1().Pods(heraldNS).GetLogs(pod, &corev1.PodLogOptions{Container: "agent", Follow: true, TailLines: &none}).Stream(ctx)
	if err != nil {
		t.Fatalf("following the log of %s: %v", pod, err)
	}
	l := &agentLog{}
	go func() {
		defer rc.Close()
		_, _ = io.Copy(l, rc) // ends with the container, or the test
	}()
	return l
}

func (l *agentLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// waitFor waits until the log has a line containing one of want, and
// returns that line.
func (l *agentLog) waitFor(t *testing.T, what string, want ...string) string {
	t.Helper()
	var line string
	waitFor(t, timeout, func() (bool, string) {
		line = lineWith(l.String(), want...)
		return line != "", what + ": no log line with any of " + strings.Join(want, " | ")
	})
	return line
}

// String is the log collected so far.
func (l *agentLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// lineWith returns the first line of log containing one of want.
func lineWith(log string, want ...string) string {
	for _, line := range strings.Split(log, "\n") {
		for _, w := range want {
			if strings.Contains(line, w) {
				return line
			}
		}
	}
	return ""
}

// agentLogNow is the log of an agent container so far.
func agentLogNow(t *testing.T, pod string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := cl.Client.CoreV1().Pods(heraldNS).GetLogs(pod, &corev1.PodLogOptions{Container: "agent"}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("log of %s: %v", pod, err)
	}
	return string(out)
}
