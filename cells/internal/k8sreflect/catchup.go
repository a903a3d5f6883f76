package k8sreflect

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Catching up with the API server (tables.Freshness): a fresh list's
// resourceVersions against the table's rows, and the deletions the table
// may already have seen.

// listVersions lists every object (a consistent, paginated read) and returns
// each one's resourceVersion by key, and the list's own resourceVersion.
func listVersions(ctx context.Context, list func(context.Context, metav1.ListOptions) (runtime.Object, error)) (map[string]string, string, error) {
	versions := map[string]string{}
	opts := metav1.ListOptions{Limit: 500}
	var listRV string
	for {
		obj, err := list(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, "", err
		}
		if listRV == "" {
			listRV = lm.GetResourceVersion()
		}
		err = meta.EachListItem(obj, func(o runtime.Object) error {
			m, err := meta.Accessor(o)
			if err != nil {
				return err
			}
			versions[objectKey(m.GetNamespace(), m.GetName())] = m.GetResourceVersion()
			return nil
		})
		if err != nil {
			return nil, "", err
		}
		if lm.GetContinue() == "" {
			return versions, listRV, nil
		}
		opts.Continue = lm.GetContinue()
	}
}

func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// behind counts the ways a table is older than a list: objects listed at a
// newer version than the row, or missing from the table without having
// been deleted since (deleted: key -> resourceVersion of the deletion, ""
// when only known to be after the list), and rows of objects that the list
// no longer has although they are not newer than it (deleted before the
// list, and the table has not seen it yet).
func behind(rows, listed map[string]string, listRV string, deleted map[string]string) (n int, example string) {
	for key, rv := range listed {
		have, ok := rows[key]
		if !ok {
			if del, ok := deleted[key]; ok && (del == "" || compareResourceVersions(del, rv) >= 0) {
				continue
			}
		}
		if !ok || compareResourceVersions(have, rv) < 0 {
			n++
			example = key
		}
	}
	for key, rv := range rows {
		if _, ok := listed[key]; !ok && compareResourceVersions(rv, listRV) <= 0 {
			n++
			example = key
		}
	}
	return n, example
}

// compareResourceVersions orders two resourceVersions of one resource.
// Kubernetes guarantees they are comparable decimal integers since 1.35
// (KEP-5504) and kube-apiserver has always produced them from etcd's
// revision; anything else compares as "older", which makes a catch-up wait
// for an exact match rather than trust a version it cannot order.
func compareResourceVersions(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	switch {
	case errA != nil || errB != nil:
		if a == b {
			return 0
		}
		return -1
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// progressEvery is how often a long catch-up says what it waits for.
const progressEvery = 5 * time.Second

func logProgress(log *slog.Logger, kind string, n int, example string, since time.Time) {
	log.Info("Waiting for the table to catch up with the API server",
		"kind", kind, "objects-behind", n, "for-example", example, "waited", time.Since(since).Round(time.Second))
}

// tombstoneTTL bounds how long deletions are remembered: far longer than any
// catch-up takes.
const tombstoneTTL = 10 * time.Minute

type tombstone struct {
	key, resourceVersion string
	at                   time.Time
	// unknownFinal: noticed by a relist; resourceVersion is then that of
	// the last version seen, so only the time says it is recent.
	unknownFinal bool
}

// tombstones are a reflector's recent deletions, oldest first.
type tombstones[Obj any] struct {
	mu   sync.Mutex
	list []tombstone
}

func (t *tombstones[Obj]) add(versionOf func(Obj) (string, string), obj Obj, unknownFinal bool) {
	if versionOf == nil {
		return
	}
	key, rv := versionOf(obj)
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	i := 0
	for i < len(t.list) && now.Sub(t.list[i].at) > tombstoneTTL {
		i++
	}
	t.list = append(t.list[i:], tombstone{key: key, resourceVersion: rv, at: now, unknownFinal: unknownFinal})
}

// deletedSince returns the deletions remembered, by key: the deletion's
// resourceVersion, or "" for one noticed by a relist after since.
func (t *tombstones[Obj]) deletedSince(since time.Time) map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]string, len(t.list))
	for _, ts := range t.list {
		switch {
		case !ts.unknownFinal:
			out[ts.key] = ts.resourceVersion
		case ts.at.After(since):
			out[ts.key] = ""
		}
	}
	return out
}
