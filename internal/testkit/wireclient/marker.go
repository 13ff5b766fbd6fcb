package wireclient

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// MarkerRule is the rule of the replay marker (Idempotent-Replayed: true), checked
// over many answers: the suites that see many answers feed it every answer to a
// keyed send, and fail when Err returns an error.
//
//   - An unkeyed send's answer, and a refusal (in flight, already held, unavailable,
//     too large, any other error but the news of a first attempt), never carry it.
//   - Of the answers that served a task or Message to one keyed send (one scope and
//     key), at most one lacks it: the first send's. Every other was served from the
//     first attempt (a replay, an attach to its live events, its Message again) and
//     carries it.
//
// The news of a first attempt (its task gone, its reply not replayable) may carry it.
// The rule cannot tell which answer was the first send's: a suite that knows checks
// Answer.Replayed itself. It is safe for concurrent use.
type MarkerRule struct {
	mu       sync.Mutex
	unmarked map[string]int // per scope and key, the unmarked answers that served something
	answers  int
	replayed int
	broken   []string
}

// Check records a, the answer to a send with key (empty: unkeyed) in scope (a
// tenant, a path: whatever tells two keys' spaces apart; "" for one).
func (r *MarkerRule) Check(scope, key string, a Answer) {
	r.Observe(scope, key, a.Kind, a.KitReason, a.Replayed, a.String())
}

// Observe is Check for an answer that is no Answer (a gRPC call's): its kind, the
// kit's ErrorInfo reason of an error, whether it carries the marker, and a
// description for the error.
func (r *MarkerRule) Observe(scope, key string, kind Kind, kitReason string, replayed bool, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unmarked == nil {
		r.unmarked = make(map[string]int)
	}
	r.answers++
	if replayed {
		r.replayed++
	}
	served := kind == Task || kind == Message
	news := kind == TaskNotFound || kitReason == "REPLY_NOT_REPLAYABLE" || kitReason == "TASK_GONE"
	switch {
	case key == "" && replayed:
		r.fail("an unkeyed send's answer carries the marker: %s", what)
	case replayed && !served && !news:
		r.fail("a refusal carries the marker: %s", what)
	case key != "" && served && !replayed:
		id := scope + "\x00" + key
		r.unmarked[id]++
		if r.unmarked[id] == 2 {
			r.fail("key %s in scope %q: a second answer that served its task or Message has no marker: %s", key, scope, what)
		}
	}
}

func (r *MarkerRule) fail(format string, args ...any) {
	if len(r.broken) < 20 {
		r.broken = append(r.broken, fmt.Sprintf(format, args...))
	}
}

// Counts returns how many answers the rule saw, and how many carried the marker.
func (r *MarkerRule) Counts() (answers, replayed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answers, r.replayed
}

// Err returns the rule's violations, or nil.
func (r *MarkerRule) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.broken) == 0 {
		return nil
	}
	return errors.New("replay marker rule broken:\n  " + strings.Join(r.broken, "\n  "))
}
