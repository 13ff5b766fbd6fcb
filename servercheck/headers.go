package servercheck

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/a2akit/idempotency"
)

// headerCarrier decides by behaviour whether the server claims the Idempotency-Key
// header carrier: a send keyed by the header alone, retried with the same header,
// and a send whose header and metadata keys differ. One product for the two and the
// disagreeing send refused: claimed, and then a malformed header must be refused
// too. Neither: not claimed. One without the other: the server reads the header
// but keeps only half of SPEC §2's promise, a failure. Four requests at most.
func (s *session) headerCarrier(ctx context.Context) Result {
	snd := s.newSend("header-carrier")
	snd.key, snd.headerKey = nil, idempotency.NewKey()
	a := s.do(ctx, snd, nil)
	if a.err != nil {
		return notChecked(a, "the header-keyed send got no answer")
	}
	if !produced(a) {
		return Result{Status: NotClaimed, Detail: "a send keyed by the Idempotency-Key header alone got " + a.describe() + ": the header carrier is not claimed", Exchanges: []*Exchange{a.ex}}
	}
	b := s.do(ctx, snd, nil)
	if b.err != nil {
		return notChecked(b, "the header-keyed retry got no answer")
	}
	mismatch := s.newSend("header-carrier mismatch")
	mismatch.headerKey = idempotency.NewKey()
	c := s.other(s.do(ctx, mismatch, nil))
	if c.err != nil {
		return notChecked(c, "the send with two different keys got no answer")
	}
	exs := []*Exchange{a.ex, b.ex, c.ex}
	deduplicated, refused := produced(b) && sameProduct(a, b), s.refusedAsInvalid(c)
	switch {
	case !deduplicated && !refused:
		s.mu.Lock()
		s.unkeyed = append(s.unkeyed, a, b)
		s.mu.Unlock()
		return Result{Status: NotClaimed, Detail: fmt.Sprintf("two identical sends keyed by the Idempotency-Key header alone got %s and %s, and a send whose header and metadata keys differ got %s: the server does not read the header (not claimed)",
			product(a), b.describe(), c.describe())}
	case !deduplicated:
		return fail(fmt.Sprintf("the server refuses a send whose Idempotency-Key header and metadata key differ, so it reads the header, but two identical sends keyed by the header alone got %s and %s: the header alone must deduplicate",
			product(a), b.describe()), exs...)
	case !refused:
		return fail(fmt.Sprintf("the server honours the Idempotency-Key header alone (%s twice), but a send whose header and metadata keys differ got %s, want %s", product(a), c.describe(), s.refusal()), exs...)
	}
	s.mu.Lock()
	s.keyed = append(s.keyed, a, b)
	s.mu.Unlock()
	s.first(a)
	s.replayed(b)
	bad := s.newSend("header-carrier malformed")
	bad.key, bad.headerKey = nil, "short"
	d := s.other(s.do(ctx, bad, nil))
	if d.err != nil {
		return notChecked(d, "the send with a malformed header key got no answer")
	}
	s.mu.Lock()
	s.keyed = append(s.keyed, d)
	s.mu.Unlock()
	if !s.refusedAsInvalid(d) {
		return fail(fmt.Sprintf("a malformed Idempotency-Key header (too short) got %s, want %s", d.describe(), s.refusal()), append(exs, d.ex)...)
	}
	return pass(fmt.Sprintf("the header alone deduplicates (%s twice); a header differing from the metadata key, and a malformed one, are refused", product(a)))
}

// extensionsHeader: every answer to a keyed send (except the refusal of an index
// that cannot honour keys) carries A2A-Extensions with the URI.
func (s *session) extensionsHeader(context.Context) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.keyed {
		if a.kind == kindError && (a.code == -32004 || a.grpcStatus == "UNIMPLEMENTED") {
			continue
		}
		n++
		if !listsExtension(a.header) {
			return fail(fmt.Sprintf("an answer to a keyed send (%s) lacks the response header A2A-Extensions: %s", a.describe(), idempotency.ExtensionURI), a.ex)
		}
	}
	if n == 0 {
		return Result{Status: NotChecked, Detail: "no keyed send was answered"}
	}
	return pass(fmt.Sprintf("all %d answers to keyed sends carry it", n))
}

// listsExtension reports whether h's A2A-Extensions (one line per URI, or
// comma-separated; X-A2A-Extensions, v0.3's name, too) names the extension.
func listsExtension(h http.Header) bool {
	for _, v := range append(h.Values("A2A-Extensions"), h.Values("X-A2A-Extensions")...) {
		for _, uri := range strings.Split(v, ",") {
			if strings.TrimSpace(uri) == idempotency.ExtensionURI {
				return true
			}
		}
	}
	return false
}

// rpcIDs: every JSON-RPC answer carries the request's id, in every event.
func (s *session) rpcIDs(context.Context) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.rpc {
		for _, ev := range a.events {
			if !ev.hasRPCEnvelope {
				continue
			}
			n++
			if !sameJSON(ev.rpcID, a.reqID) {
				return fail(fmt.Sprintf("a JSON-RPC answer (%s) carries id %s, the request id %s", a.describe(), ev.rpcID, a.reqID), a.ex)
			}
		}
	}
	return pass(fmt.Sprintf("all %d JSON-RPC answers and events carry their request's id", n))
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return x == y
}

// marker: Idempotent-Replayed is optional until a server sends it; then it must be
// on every answer served from a first attempt and on no first send.
func (s *session) marker(context.Context) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	marked := func(a *answer) bool { return a.header.Get("Idempotent-Replayed") != "" }
	for _, a := range s.firsts {
		if marked(a) {
			return fail("a first send's answer carries Idempotent-Replayed: "+a.header.Get("Idempotent-Replayed")+"; a first send never does", a.ex)
		}
	}
	for _, a := range s.unkeyed {
		if marked(a) {
			return fail("an unkeyed send's answer carries Idempotent-Replayed", a.ex)
		}
	}
	claimed := false
	for _, a := range append(s.keyed, s.unkeyed...) {
		if marked(a) {
			claimed = true
		}
	}
	if !claimed {
		return Result{Status: NotClaimed, Detail: fmt.Sprintf("no answer carries Idempotent-Replayed (%d replays seen): the marker is not claimed", len(s.replays))}
	}
	for _, a := range s.replays {
		if v := a.header.Get("Idempotent-Replayed"); v != "true" {
			return fail(fmt.Sprintf("the server marks replays, but this replay (%s) carries Idempotent-Replayed %q, want \"true\"", a.describe(), v), a.ex)
		}
	}
	for _, g := range s.groups {
		unmarked := 0
		for _, a := range g {
			if !marked(a) {
				unmarked++
			}
		}
		if unmarked > 1 {
			return fail(fmt.Sprintf("%d of %d concurrent identical sends are unmarked, but only one of them is the first send", unmarked, len(g)), g[0].ex)
		}
	}
	return pass(fmt.Sprintf("all %d replays are marked, no first send is", len(s.replays)))
}
