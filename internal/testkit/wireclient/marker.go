package wireclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/a2akit/idempotency"
)

// MarkerRule is the rule of the replay marker (Idempotent-Replayed: true), checked
// over many answers: the suites that see many answers feed it every answer to a
// keyed send, and fail when Err returns an error.
//
//   - An unkeyed send's answer, and a refusal (in flight, already held, unavailable,
//     too large, any other error but the news of a first attempt), never carry it.
//   - Of the answers to keyed sends that served one task or one Message (by its task
//     id, or the Message's messageId), at most one lacks it: the first send's. Every
//     other was served from the first attempt (a replay, an attach to its live
//     events, its Message again) and carries it. (Counting by what was served, not
//     by key, keeps the rule true whatever the scope of keys: the same key in two
//     tenants, or of two callers, serves two tasks.)
//
// The news of a first attempt (its task gone, its reply not replayable) may carry it.
// The rule cannot tell which answer was the first send's: a suite that knows checks
// Answer.Replayed itself. It is safe for concurrent use.
type MarkerRule struct {
	mu       sync.Mutex
	unmarked map[string]int // per task or Message served, the unmarked answers
	answers  int
	replayed int
	broken   []string
}

// Check records a, the answer to a send with key (empty: unkeyed).
func (r *MarkerRule) Check(key string, a Answer) {
	served := a.TaskID
	if a.Kind == Message {
		served = a.MessageID
	}
	r.Observe(key, a.Kind, served, a.KitReason, a.Replayed, a.String())
}

// Observe is Check for an answer that is no Answer (a gRPC call's): its kind, the
// id of the task or Message it served, the kit's ErrorInfo reason of an error,
// whether it carries the marker, and a description for the error.
func (r *MarkerRule) Observe(key string, kind Kind, served, kitReason string, replayed bool, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unmarked == nil {
		r.unmarked = make(map[string]int)
	}
	r.answers++
	if replayed {
		r.replayed++
	}
	isServed := kind == Task || kind == Message
	news := kind == TaskNotFound || kitReason == "REPLY_NOT_REPLAYABLE" || kitReason == "TASK_GONE"
	// An answer this package cannot read (another version's shape) is no refusal.
	refusal := kind != Unreadable && !isServed && !news
	switch {
	case key == "" && replayed:
		r.fail("an unkeyed send's answer carries the marker: %s", what)
	case replayed && refusal:
		r.fail("a refusal carries the marker: %s", what)
	case key != "" && isServed && !replayed && served != "":
		id := kind.String() + " " + served
		r.unmarked[id]++
		if r.unmarked[id] == 2 {
			r.fail("key %s: a second answer that served %s has no marker: %s", key, id, what)
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

// RequestKey returns the key of a send's request: from the message's metadata
// (params.message on JSON-RPC, message on HTTP+JSON) or else from the
// Idempotency-Key header; "" when neither names one, or the body is not a send.
func RequestKey(header http.Header, body []byte) string {
	var v struct {
		Params *requestParams `json:"params"`
		requestParams
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	p := &v.requestParams
	if v.Params != nil {
		p = v.Params
	}
	if p.Message == nil {
		return ""
	}
	key, _, _ := idempotency.KeyOf(p.Message.Metadata)
	if key == "" {
		key, _, _ = idempotency.KeyOfSend("", nil, header.Values(idempotency.KeyHeader))
	}
	return key
}

type requestParams struct {
	Message *struct {
		Metadata any `json:"metadata"`
	} `json:"message"`
}

// CheckExchange reads the answer of one recorded HTTP exchange (the request's path,
// header and body, the response's status, header and whole body) and checks it with
// r. An answer that cannot be read whole (a stream cut) is skipped.
func (r *MarkerRule) CheckExchange(path string, reqHeader http.Header, reqBody []byte, status int, header http.Header, body []byte) {
	key := RequestKey(reqHeader, reqBody)
	b := HTTPJSON
	if !strings.Contains(path, ":") {
		b = JSONRPC // the HTTP+JSON paths of sends are method paths: message:send, message:stream
	}
	a, err := ReadAnswer(&http.Response{StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(body))}, Send{Binding: b})
	if err != nil {
		return
	}
	r.Check(key, a)
}

// rules holds the rule of each test (MarkerRuleOf).
var rules sync.Map // testing.TB → *MarkerRule

// MarkerRuleOf returns t's rule, made at the first call, which fails t at its end
// when the rule is broken.
func MarkerRuleOf(t testing.TB) *MarkerRule {
	r, loaded := rules.LoadOrStore(t, &MarkerRule{})
	rule := r.(*MarkerRule)
	if !loaded {
		t.Cleanup(func() {
			rules.Delete(t)
			if err := rule.Err(); err != nil {
				t.Error(err)
			}
		})
	}
	return rule
}
