package k8sreflect

import (
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

// The store keeps no objects: what a relist no longer holds is found in
// the table, deleted, and remembered as a deletion noticed by a relist.
func TestRelistDeletesWhatTheListLacks(t *testing.T) {
	svc := func(name string, rv int) any {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: strconv.Itoa(rv)}}
	}
	type step struct {
		name string
		do   func(s *queueStore[*corev1.Service]) error
		want map[string]string // row key -> resourceVersion
	}
	// isList: the step's name says it is a list (Replace).
	isList := func(st step) bool { return strings.Contains(st.name, "list") }
	for _, tt := range []struct {
		name  string
		steps []step
		// deleted: the tombstones after the last step, key -> resourceVersion
		// of the deletion ("" when noticed by a relist).
		deleted map[string]string
	}{
		{
			name: "deleted and created while disconnected",
			steps: []step{
				{"first list", func(s *queueStore[*corev1.Service]) error {
					return s.Replace([]any{svc("a", 1), svc("b", 2), svc("c", 3)}, "3")
				}, map[string]string{"ns/a": "1", "ns/b": "2", "ns/c": "3"}},
				{"watch: b deleted", func(s *queueStore[*corev1.Service]) error { return s.Delete(svc("b", 4)) },
					map[string]string{"ns/a": "1", "ns/c": "3"}},
				{"watch: a updated", func(s *queueStore[*corev1.Service]) error { return s.Update(svc("a", 5)) },
					map[string]string{"ns/a": "5", "ns/c": "3"}},
				{"relist after a gap: c gone, d new", func(s *queueStore[*corev1.Service]) error {
					return s.Replace([]any{svc("a", 5), svc("d", 7)}, "8")
				}, map[string]string{"ns/a": "5", "ns/d": "7"}},
			},
			deleted: map[string]string{"ns/b": "4", "ns/c": ""},
		},
		{
			name: "everything deleted while disconnected",
			steps: []step{
				{"first list", func(s *queueStore[*corev1.Service]) error {
					return s.Replace([]any{svc("a", 1), svc("b", 2)}, "2")
				}, map[string]string{"ns/a": "1", "ns/b": "2"}},
				{"empty relist", func(s *queueStore[*corev1.Service]) error { return s.Replace(nil, "9") },
					map[string]string{}},
			},
			deleted: map[string]string{"ns/a": "", "ns/b": ""},
		},
		{
			name: "a relist that changes nothing deletes nothing",
			steps: []step{
				{"first list", func(s *queueStore[*corev1.Service]) error {
					return s.Replace([]any{svc("a", 1)}, "1")
				}, map[string]string{"ns/a": "1"}},
				{"watch: b created", func(s *queueStore[*corev1.Service]) error { return s.Add(svc("b", 2)) },
					map[string]string{"ns/a": "1", "ns/b": "2"}},
				{"relist", func(s *queueStore[*corev1.Service]) error {
					return s.Replace([]any{svc("a", 1), svc("b", 2)}, "2")
				}, map[string]string{"ns/a": "1", "ns/b": "2"}},
			},
			deleted: map[string]string{},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := statedb.New()
			tbl, err := tables.NewServicesTable(db)
			if err != nil {
				t.Fatal(err)
			}
			r := &reflector[*corev1.Service, *tables.Service]{
				name: "services", db: db, table: tbl, log: slog.New(slog.DiscardHandler),
				transform: tables.ServiceFromK8s,
				versionOf: func(s *tables.Service) (string, string) { return s.Key(), s.ResourceVersion },
			}
			q := newEventQueue[*corev1.Service]()
			var fails uint64
			s := newQueueStore(q, func() uint64 { return fails })
			start := time.Now()
			for _, st := range tt.steps {
				fails++
				if err := st.do(s); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				listedAt, listed := r.write(q.take())
				if listed != isList(st) || (listed && listedAt != fails) {
					t.Errorf("%s: listed %v at %d, want %v at %d", st.name, listed, listedAt, isList(st), fails)
				}
				got := map[string]string{}
				for row := range tbl.All(db.ReadTxn()) {
					got[row.Key()] = row.ResourceVersion
				}
				if !maps.Equal(got, st.want) {
					t.Errorf("%s: table holds %v, want %v", st.name, got, st.want)
				}
			}
			if got := r.tombstones.deletedSince(start); !maps.Equal(got, tt.deleted) {
				t.Errorf("deletions remembered %v, want %v", got, tt.deleted)
			}
			if r.listedKeys != nil {
				t.Errorf("keys of a finished list still held: %v", slices.Collect(maps.Keys(r.listedKeys)))
			}
		})
	}
}
