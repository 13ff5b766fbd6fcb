package servercheck

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// malformed: §2's four refusals, in their order, on the unary send, one on the
// streaming send (SSE-framed on JSON-RPC), and no task in their context.
func (s *session) malformed(ctx context.Context) Result {
	contextID := newID("check-ctx-")
	cases := []struct {
		name string
		key  any
		word []string // the refusal's message names the failed check
	}{
		// The words the kit's messages and the Rust SDK's use.
		{"too short (and with a bad character)", "bad key!", []string{"short", "at least 16"}},
		{"too long (and with a bad character)", strings.Repeat("k", 290) + " bad key", []string{"long", "at most 255"}},
		{"bad character", "abcdefghijklmnop qrstuvwxyz", []string{"character", "ascii"}},
		{"a number, not a string", json.RawMessage("12345678901234567890"), []string{"string"}},
		{"null, not a string", json.RawMessage("null"), []string{"string"}},
	}
	var notes []string
	for i, tc := range cases {
		snd := s.newSend("malformed")
		snd.key, snd.contextID = tc.key, contextID
		a := s.other(s.do(ctx, snd, nil))
		if a.err != nil {
			return notChecked(a, "the send of a key that is "+tc.name+" got no answer")
		}
		if produced(a) {
			return fail(fmt.Sprintf("a key that is %s was accepted and ran: %s, want %s", tc.name, a.describe(), s.refusal()), a.ex)
		}
		if !s.refusedAsInvalid(a) {
			return fail(fmt.Sprintf("a key that is %s got %s, want %s", tc.name, a.describe(), s.refusal()), a.ex)
		}
		if i < 4 && !containsAny(a.message, tc.word) {
			return fail(fmt.Sprintf("a key that is %s was refused, but the message does not say so (want a mention of %q: the checks run too short, too long, bad character): %q",
				tc.name, tc.word[0], cut(a.message, 200)), a.ex)
		}
	}
	// The streaming send: JSON-RPC errors must be SSE-framed there (a2a-go's client
	// drops a plain body).
	snd := s.newSend("malformed-stream")
	snd.key, snd.contextID, snd.stream = "short", contextID, true
	a := s.other(s.do(ctx, snd, nil))
	switch {
	case a.err != nil:
		return notChecked(a, "the streaming send of a short key got no answer")
	case produced(a):
		return fail("a short key on a streaming send was accepted and ran: "+a.describe(), a.ex)
	case !s.refusedAsInvalid(a):
		return fail(fmt.Sprintf("a short key on a streaming send got %s, want %s", a.describe(), s.refusal()), a.ex)
	case s.iface.Binding == BindingJSONRPC && !a.sse:
		return fail("a short key on SendStreamingMessage was refused with a plain JSON body: the error must be one Server-Sent Event (SPEC §2), or a2a-go's client drops it", a.ex)
	}
	// Nothing was created in their context, where the server lists tasks.
	if n, ex, err := s.listTasks(ctx, contextID); err != nil {
		notes = append(notes, "that nothing was created is inferred from the refusals (the server does not list tasks to the checker: "+err.Error()+")")
	} else if n > 0 {
		return fail(fmt.Sprintf("the refused sends created %d tasks in their context %s", n, contextID), ex)
	} else {
		notes = append(notes, "no task in their context")
	}
	return pass(fmt.Sprintf("%d malformed keys refused with %s, each naming what was wrong (too short before too long before bad character); %s",
		len(cases)+1, s.refusal(), strings.Join(notes, "; ")))
}

func containsAny(s string, words []string) bool {
	s = strings.ToLower(s)
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// listTasks counts the tasks in contextID (A2A v1.0 ListTasks); an error when the
// server does not list them.
func (s *session) listTasks(ctx context.Context, contextID string) (int, *Exchange, error) {
	if s.iface.Version != "1.0" {
		return 0, nil, fmt.Errorf("A2A v0.3 has no ListTasks")
	}
	var a *answer
	if s.iface.Binding == BindingJSONRPC {
		params := map[string]any{"contextId": contextID}
		if s.iface.Tenant != "" {
			params["tenant"] = s.iface.Tenant
		}
		a = s.c.post(ctx, s.iface.URL, map[string]any{"jsonrpc": "2.0", "id": newID("check-"), "method": "ListTasks", "params": params})
	} else {
		u := strings.TrimSuffix(s.iface.URL, "/")
		if s.iface.Tenant != "" {
			u += "/" + url.PathEscape(s.iface.Tenant)
		}
		var err error
		if a, err = s.c.get(ctx, u+"/tasks?contextId="+url.QueryEscape(contextID), s.iface.Version); err != nil {
			return 0, nil, err
		}
	}
	if a.err != nil {
		return 0, a.ex, a.err
	}
	var list struct {
		Result *struct {
			Tasks []json.RawMessage `json:"tasks"`
		} `json:"result"`
		Tasks []json.RawMessage `json:"tasks"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(a.body, &list); err != nil || a.status != http.StatusOK || list.Error != nil {
		why := fmt.Sprintf("HTTP %d", a.status)
		if list.Error != nil {
			why += ": " + cut(list.Error.Message, 80)
		}
		return 0, a.ex, fmt.Errorf("ListTasks answered %s", why)
	}
	if list.Result != nil {
		return len(list.Result.Tasks), a.ex, nil
	}
	return len(list.Tasks), a.ex, nil
}
