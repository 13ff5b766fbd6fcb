package middleware

import "sync"

// waitKey names a key in its scope.
type waitKey struct{ scope, key string }

// notifier wakes the retries of this process that wait for a first attempt of the
// same process to bind or release its key, so that they need not poll the index.
// Retries whose first attempt runs in another process poll.
type notifier struct {
	mu sync.Mutex
	m  map[waitKey]*waitList
}

type waitList struct {
	ch chan struct{} // closed by notify
	n  int           // waiters
}

// join returns a channel closed at the next notify of k, and a function to call when
// the caller stops waiting.
func (n *notifier) join(k waitKey) (<-chan struct{}, func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = make(map[waitKey]*waitList)
	}
	l := n.m[k]
	if l == nil {
		l = &waitList{ch: make(chan struct{})}
		n.m[k] = l
	}
	l.n++
	return l.ch, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		l.n--
		if l.n == 0 && n.m[k] == l {
			delete(n.m, k)
		}
	}
}

// notify wakes every waiter of k.
func (n *notifier) notify(k waitKey) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l := n.m[k]; l != nil {
		close(l.ch)
		delete(n.m, k)
	}
}
