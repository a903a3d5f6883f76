package cpvip

import (
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// logRecorder writes the Events the responder records (another host
// answering for a VIP) to the log: this mode has no API server to send
// them to.
type logRecorder struct{ log *slog.Logger }

func newLogRecorder(log *slog.Logger) record.EventRecorder { return logRecorder{log} }

func (r logRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	name := ""
	if m, err := meta.Accessor(object); err == nil {
		name = m.GetName()
	}
	r.log.Warn(message, "reason", reason, "type", eventtype, "object", name)
}

func (r logRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.Event(object, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (r logRecorder) AnnotatedEventf(object runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.Eventf(object, eventtype, reason, messageFmt, args...)
}
