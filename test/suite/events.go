package suite

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// WarningEvents counts the Warning Events of one reason on the object
// ns/name whose message contains text, repeats the recorder folded into
// one Event's count included; the messages are for a failure message.
func WarningEvents(ctx context.Context, kube kubernetes.Interface, ns, name, reason, text string) (int, []string, error) {
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name + ",reason=" + reason,
	})
	if err != nil {
		return 0, nil, err
	}
	n := 0
	var msgs []string
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, text) {
			n += max(int(e.Count), 1)
			msgs = append(msgs, fmt.Sprintf("%s (x%d, from %s)", e.Message, e.Count, e.Source.Host))
		}
	}
	return n, msgs, nil
}
