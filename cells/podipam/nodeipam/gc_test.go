package nodeipam

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
)

// apiPod is what the API server answers for a pod in one round of the
// garbage collector: the pod (uid, node), not found, or an error.
type apiPod struct {
	uid, node string
	notFound  bool
	err       bool
}

// gcStep is one round of the garbage collector, at a time after the
// allocation; table is the pods table (name → UID), api the API server.
type gcStep struct {
	at time.Duration
	// table nil: the pods table is not complete yet.
	table   map[string]string
	api     map[string]apiPod
	asked   []string // pods the API server is asked about
	release []string // containers released
}

func TestGarbageCollection(t *testing.T) {
	const grace = time.Minute
	const node = "node1"
	gone := map[string]string{}
	a := map[string]string{"a": "uid-a"}
	for _, tt := range []struct {
		name    string
		entries []string // pod name = container; UID uid-<name>
		steps   []gcStep
	}{
		{"pod gone: released only after the grace, a recheck and the API server's word", []string{"a"}, []gcStep{
			{at: 10 * time.Second, table: gone},       // allocation younger than grace
			{at: grace, table: gone},                  // first look: suspected
			{at: grace + 30*time.Second, table: gone}, // suspected for less than a grace
			{at: 2 * grace, table: gone, api: map[string]apiPod{"a": {notFound: true}}, asked: []string{"a"}, release: []string{"a"}},
			{at: 3 * grace, table: gone}, // nothing left
		}},
		{"pod back in the table before the recheck: kept, suspected afresh", []string{"a"}, []gcStep{
			{at: grace, table: gone},
			{at: 2 * grace, table: a},
			{at: 3 * grace, table: gone},
			{at: 3*grace + 30*time.Second, table: gone},
			{at: 4 * grace, table: gone, api: map[string]apiPod{"a": {notFound: true}}, asked: []string{"a"}, release: []string{"a"}},
		}},
		{"pod present with the same UID: never asked about", []string{"a"}, []gcStep{
			{at: grace, table: a}, {at: 2 * grace, table: a}, {at: 10 * grace, table: a},
		}},
		{"table behind, API server has the pod on this node: kept, suspected afresh", []string{"a"}, []gcStep{
			{at: grace, table: gone},
			{at: 2 * grace, table: gone, api: map[string]apiPod{"a": {uid: "uid-a", node: node}}, asked: []string{"a"}},
			{at: 2*grace + 30*time.Second, table: gone}, // a new suspicion begins here
			{at: 3*grace + 30*time.Second, table: gone, api: map[string]apiPod{"a": {uid: "uid-a", node: node}}, asked: []string{"a"}},
		}},
		{"pod recreated with another UID: released", []string{"a"}, []gcStep{
			{at: grace, table: map[string]string{"a": "uid-other"}},
			{at: 2 * grace, table: map[string]string{"a": "uid-other"}, api: map[string]apiPod{"a": {uid: "uid-other", node: node}}, asked: []string{"a"}, release: []string{"a"}},
		}},
		{"same UID but on another node (API server): released", []string{"a"}, []gcStep{
			{at: grace, table: gone},
			{at: 2 * grace, table: gone, api: map[string]apiPod{"a": {uid: "uid-a", node: "node2"}}, asked: []string{"a"}, release: []string{"a"}},
		}},
		{"API server cannot answer: kept, asked again next round", []string{"a"}, []gcStep{
			{at: grace, table: gone},
			{at: 2 * grace, table: gone, api: map[string]apiPod{"a": {err: true}}, asked: []string{"a"}},
			{at: 2*grace + 30*time.Second, table: gone, api: map[string]apiPod{"a": {notFound: true}}, asked: []string{"a"}, release: []string{"a"}},
		}},
		{"pods table not complete yet: nothing looked at", []string{"a"}, []gcStep{
			{at: grace, table: gone},
			{at: 2 * grace, table: nil}, {at: 3 * grace, table: nil}, // a restart of the watch: suspicion is kept, nothing judged
			{at: 3*grace + time.Second, table: gone, api: map[string]apiPod{"a": {notFound: true}}, asked: []string{"a"}, release: []string{"a"}},
		}},
		{"pods table not complete from the start: nothing suspected", []string{"a"}, []gcStep{
			{at: grace, table: nil}, {at: 2 * grace, table: nil}, {at: 3 * grace, table: nil},
			{at: 4 * grace, table: gone}, // only now suspected
			{at: 5 * grace, table: gone, api: map[string]apiPod{"a": {notFound: true}}, asked: []string{"a"}, release: []string{"a"}},
		}},
		{"allocation without a UID: any pod of that name keeps it", []string{""}, []gcStep{
			{at: grace, table: map[string]string{"": "uid-whatever"}}, {at: 2 * grace, table: map[string]string{"": "uid-whatever"}},
			{at: 3 * grace, table: gone},
			{at: 4 * grace, table: gone, api: map[string]apiPod{"": {uid: "uid-new", node: node}}, asked: []string{""}},
		}},
		{"only the gone pod of two", []string{"a", "b"}, []gcStep{
			{at: grace, table: map[string]string{"b": "uid-b"}},
			{at: 2 * grace, table: map[string]string{"b": "uid-b"}, api: map[string]apiPod{"a": {notFound: true}}, asked: []string{"a"}, release: []string{"a"}},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Unix(1000, 0)
			g := gcTracker{grace: grace}
			var entries []entry
			for i, name := range tt.entries {
				att := ipamv1.Attachment{ContainerID: name, IfName: "eth0"}
				pod := ipamv1.PodRef{Namespace: "ns", Name: name, UID: "uid-" + name}
				if name == "" { // journaled by a runtime that did not pass K8S_POD_UID
					pod.UID = ""
				}
				// Dual-stack: two entries per attachment, asked about once.
				entries = append(entries,
					entry{IP: netip.AddrFrom4([4]byte{198, 18, 0, byte(2 + i)}), Pool: "default", Pod: pod, Attachment: att, Since: start},
					entry{IP: netip.MustParseAddr("fd00::2").Next(), Pool: "default", Pod: pod, Attachment: att, Since: start})
			}
			for i, st := range tt.steps {
				var asked []string
				ask := func(ref ipamv1.PodRef) (*corev1.Pod, error) {
					asked = append(asked, ref.Name)
					r, ok := st.api[ref.Name]
					switch {
					case !ok:
						t.Fatalf("step %d: API server asked about %s, unexpected", i, ref.Name)
					case r.notFound:
						return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, ref.Name)
					case r.err:
						return nil, errors.New("connection refused")
					}
					return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, UID: types.UID(r.uid)}, Spec: corev1.PodSpec{NodeName: r.node}}, nil
				}
				var inTable func(ipamv1.PodRef) (string, bool)
				if st.table != nil {
					inTable = func(ref ipamv1.PodRef) (string, bool) { uid, ok := st.table[ref.Name]; return uid, ok }
				}
				release := g.round(entries, inTable, ask, node, start.Add(st.at))
				var got []string
				for _, c := range release {
					got = append(got, c.att.ContainerID)
				}
				if !slices.Equal(asked, st.asked) || !slices.Equal(got, st.release) {
					t.Fatalf("step %d (at %s): asked %v, released %v; want asked %v, released %v", i, st.at, asked, got, st.asked, st.release)
				}
				// What collectGarbage releases is gone from the state.
				entries = slices.DeleteFunc(entries, func(e entry) bool { return slices.Contains(got, e.ContainerID) })
			}
			if len(g.suspects) > len(entries) {
				t.Errorf("suspects %v outlive their allocations", g.suspects)
			}
		})
	}
}

// TestGarbageCollectionForgetsReleased: an attachment released by a DEL
// while suspected is forgotten; a later attachment of the same ID starts
// from nothing.
func TestGarbageCollectionForgetsReleased(t *testing.T) {
	start := time.Unix(1000, 0)
	g := gcTracker{grace: time.Minute}
	e := entry{IP: netip.MustParseAddr("198.18.0.2"), Pod: ipamv1.PodRef{Namespace: "ns", Name: "a", UID: "uid-a"}, Attachment: ipamv1.Attachment{ContainerID: "a", IfName: "eth0"}, Since: start}
	none := func(ipamv1.PodRef) (string, bool) { return "", false }
	noAPI := func(ref ipamv1.PodRef) (*corev1.Pod, error) {
		t.Fatalf("API server asked about %s", ref.Name)
		return nil, nil
	}
	g.round([]entry{e}, none, noAPI, "node1", start.Add(time.Minute))
	if len(g.suspects) != 1 {
		t.Fatalf("suspects %v, want the attachment", g.suspects)
	}
	g.round(nil, none, noAPI, "node1", start.Add(90*time.Second)) // DEL came
	if len(g.suspects) != 0 {
		t.Fatalf("suspects %v after the DEL, want none", g.suspects)
	}
	e.Since = start.Add(100 * time.Second) // same container ID, ADDed again
	g.round([]entry{e}, none, noAPI, "node1", start.Add(2*time.Minute+40*time.Second))
	g.round([]entry{e}, none, noAPI, "node1", start.Add(3*time.Minute))
}
