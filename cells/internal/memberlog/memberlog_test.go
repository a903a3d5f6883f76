package memberlog

import (
	"bytes"
	"log"
	"log/slog"
	"strings"
	"testing"
)

// A peer with another secret must be visible at the default log level,
// without a line for every one of its beats.
func TestDecryptFailureWarnsOnce(t *testing.T) {
	var logs bytes.Buffer
	l := log.New(&Writer{Log: slog.New(slog.NewTextHandler(&logs, nil)), SecretHint: "is peer-secret-file the same?"}, "", 0)
	for range 3 {
		l.Printf("[ERR] memberlist: Decrypt packet failed: No installed keys could decrypt the message from=198.18.0.2:7948")
	}
	l.Printf("[DEBUG] memberlist: something else")
	out := logs.String()
	if n := strings.Count(out, "level=WARN"); n != 1 || !strings.Contains(out, "peer-secret-file") || !strings.Contains(out, "from=198.18.0.2:7948") {
		t.Fatalf("want one warning naming peer-secret-file and the sender, got:\n%s", out)
	}
	if strings.Contains(out, "something else") {
		t.Fatalf("other memberlist lines must stay at debug level:\n%s", out)
	}
}
