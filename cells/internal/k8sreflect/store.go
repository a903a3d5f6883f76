package k8sreflect

// queueStore is the reflector's store (cache.ReflectorStore). It keeps no
// objects: it passes every change on to the event queue, and the table is
// the only copy. A list (Replace) is queued between two markers, relist and
// listed; the run loop deletes the rows of objects the list did not hold
// (deleted while nobody watched) when it reaches the second one. The listed
// marker carries the reflector's failure count at that moment: once the run
// loop wrote the batch up to it, the table holds that list.
type queueStore[K any] struct {
	q     *eventQueue[K]
	fails func() uint64
}

func newQueueStore[K any](q *eventQueue[K], fails func() uint64) *queueStore[K] {
	return &queueStore[K]{q: q, fails: fails}
}

func (s *queueStore[K]) Add(obj any) error    { return s.upsert(obj) }
func (s *queueStore[K]) Update(obj any) error { return s.upsert(obj) }

func (s *queueStore[K]) upsert(obj any) error {
	if k, ok := obj.(K); ok {
		s.q.push(k, false)
	}
	return nil
}

// Delete queues a deletion a watch saw. The reflector passes the deleted
// object itself (never a DeletedFinalStateUnknown: that is an informer's).
func (s *queueStore[K]) Delete(obj any) error {
	if k, ok := obj.(K); ok {
		s.q.push(k, true)
	}
	return nil
}

// Replace queues a fresh list: every listed object is upserted, and the
// rows of the others are deleted when the run loop reaches its end.
func (s *queueStore[K]) Replace(list []any, _ string) error {
	evs := make([]pendingEvent[K], 0, len(list)+2)
	evs = append(evs, pendingEvent[K]{relist: true})
	for _, obj := range list {
		if k, ok := obj.(K); ok {
			evs = append(evs, pendingEvent[K]{obj: k})
		}
	}
	evs = append(evs, pendingEvent[K]{listed: true, fails: s.fails()})
	s.q.add(evs...)
	return nil
}

func (s *queueStore[K]) Resync() error { return nil }
