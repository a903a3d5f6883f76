package k8sreflect

import (
	"k8s.io/client-go/tools/cache"
)

// queueStore is the reflector's store (cache.ReflectorStore): it keeps
// the objects by key, as an informer's store does (stripped of what no
// row is made of), and passes every change on to the event queue. A list (Replace) ends with a marker that carries
// the reflector's failure count at that moment: once the run loop wrote
// the batch up to a marker, the table holds that list.
type queueStore[K any] struct {
	objs  map[string]K
	q     *eventQueue[K]
	fails func() uint64
}

func newQueueStore[K any](q *eventQueue[K], fails func() uint64) *queueStore[K] {
	return &queueStore[K]{objs: map[string]K{}, q: q, fails: fails}
}

func (s *queueStore[K]) Add(obj any) error    { return s.upsert(obj) }
func (s *queueStore[K]) Update(obj any) error { return s.upsert(obj) }

func (s *queueStore[K]) upsert(obj any) error {
	obj, _ = stripUnused(obj)
	k, ok := obj.(K)
	if !ok {
		return nil
	}
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	s.objs[key] = k
	s.q.push(k, false, false)
	return nil
}

func (s *queueStore[K]) Delete(obj any) error {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	delete(s.objs, key)
	if k, ok := obj.(K); ok {
		s.q.push(k, true, false)
	}
	return nil
}

// Replace: objects missing from the list were deleted while nobody
// watched (their last known state is all there is); the listed ones are
// upserted.
func (s *queueStore[K]) Replace(list []any, _ string) error {
	fails := s.fails()
	fresh := make(map[string]K, len(list))
	for _, obj := range list {
		obj, _ = stripUnused(obj)
		k, ok := obj.(K)
		if !ok {
			continue
		}
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return err
		}
		fresh[key] = k
	}
	for key, old := range s.objs {
		if _, ok := fresh[key]; !ok {
			s.q.push(old, true, true)
		}
	}
	for _, k := range fresh {
		s.q.push(k, false, false)
	}
	s.objs = fresh
	s.q.listed(fails)
	return nil
}

func (s *queueStore[K]) Resync() error { return nil }
