package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/middleware"
)

// eachMode runs test once per mode of mwtest.Modes, as a subtest named by the mode,
// with a fresh harness made from cfg and a client of the mode's dialect. The subtests
// share cfg: it holds no state (an Index) that one could leave to the next.
func eachMode(t *testing.T, cfg mwtest.Config, test func(t *testing.T, m mwtest.Mode, h *mwtest.Harness, c *a2aclient.Client)) {
	for _, m := range mwtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			h := mwtest.New(t, cfg)
			test(t, m, h, h.Client(m.Dialect, "", ""))
		})
	}
}

func TestRetryGetsSameTaskAndAgentRunsOnce(t *testing.T) {
	eachMode(t, mwtest.Config{}, func(t *testing.T, m mwtest.Mode, h *mwtest.Harness, c *a2aclient.Client) {
		ctx := context.Background()
		key := idempotency.NewKey()
		msg := mwtest.KeyedMessage(t, key, "echo hello")

		first, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			t.Fatalf("first send: %v", err)
		}
		id := mwtest.TaskOf(first[0])
		if id == "" || mwtest.FinalState(first) != a2a.TaskStateCompleted {
			t.Fatalf("first send: got %d events, task %q, state %q", len(first), id, mwtest.FinalState(first))
		}
		if !m.Streaming {
			if n := len(first[0].(*a2a.Task).Artifacts); n != 1 {
				t.Fatalf("first send: %d artifacts, want 1", n)
			}
		}
		// The retry, and a retry through the other kind of send, get the same
		// task; the agent does not run again.
		for _, streaming := range []bool{m.Streaming, !m.Streaming} {
			retry, err := mwtest.Send(ctx, c, streaming, &a2a.SendMessageRequest{Message: msg})
			if err != nil {
				t.Fatalf("retry (streaming=%v): %v", streaming, err)
			}
			task, ok := retry[0].(*a2a.Task)
			if !ok || task.ID != id {
				t.Fatalf("retry (streaming=%v): first event %#v, want task %s", streaming, retry[0], id)
			}
			if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
				t.Fatalf("retry (streaming=%v): state %s with %d artifacts, want the completed task", streaming, task.Status.State, len(task.Artifacts))
			}
			if streaming && len(retry) != 1 {
				t.Fatalf("streaming retry of a finished task: %d events, want the task alone", len(retry))
			}
		}
		h.ExpectRanOnce(t, msg.ID)
		h.ExpectOutcomes(middleware.OutcomeClaimed, middleware.OutcomeReplayed, middleware.OutcomeReplayed)
		if e := h.LastEvent(); e.Binding != middleware.ProtocolBinding(m.Binding) || e.Version != middleware.ProtocolVersion(m.Version) || e.Scope != "" {
			t.Fatalf("last event %+v: want binding %s, version %s, scope \"\"", e, m.Binding, m.Version)
		}
	})
}

// A blocking retry answers the task as it is now, without waiting for it to finish,
// with its history shaped by the retry's historyLength.
func TestRetryAnswersCurrentState(t *testing.T) {
	for _, d := range mwtest.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			h := mwtest.New(t, mwtest.Config{})
			c := h.Client(d, "", "")
			ctx := context.Background()
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "block until released")

			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
			if err != nil {
				t.Fatalf("first send: %v", err)
			}
			id := res.(*a2a.Task).ID
			mwtest.WaitState(t, c, id, a2a.TaskStateWorking)

			// The agent is blocked: a blocking retry still answers at once.
			retry, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if task := retry.(*a2a.Task); task.ID != id || task.Status.State != a2a.TaskStateWorking {
				t.Fatalf("retry while running: task %s in %s, want %s working", task.ID, task.Status.State, id)
			}

			h.ReleaseAgents()
			mwtest.WaitState(t, c, id, a2a.TaskStateCompleted)
			for _, tc := range []struct {
				historyLength *int
				history       int
			}{{nil, 1}, {ptr(0), 0}, {ptr(1), 1}, {ptr(5), 1}} {
				retry, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{HistoryLength: tc.historyLength}})
				if err != nil {
					t.Fatalf("retry: %v", err)
				}
				task := retry.(*a2a.Task)
				if task.ID != id || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
					t.Fatalf("retry after completion: task %s in %s with %d artifacts", task.ID, task.Status.State, len(task.Artifacts))
				}
				if len(task.History) != tc.history {
					t.Fatalf("historyLength %v: %d history messages, want %d", deref(tc.historyLength), len(task.History), tc.history)
				}
			}
			h.ExpectRanOnce(t, msg.ID)
		})
	}
}

func TestKeyReusedByAnotherMessageIsRefused(t *testing.T) {
	eachMode(t, mwtest.Config{}, func(t *testing.T, m mwtest.Mode, h *mwtest.Harness, c *a2aclient.Client) {
		ctx := context.Background()
		key := idempotency.NewKey()
		holder := mwtest.KeyedMessage(t, key, "echo the holder's secret content")
		first, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: holder})
		if err != nil {
			t.Fatalf("first send: %v", err)
		}

		other := mwtest.KeyedMessage(t, key, "echo another message")
		evs, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: other})
		if !errors.Is(err, a2a.ErrInvalidParams) {
			t.Fatalf("reused key: events %v, error %v; want ErrInvalidParams", evs, err)
		}
		if !strings.Contains(err.Error(), "already held") {
			t.Fatalf("error %q does not say the key is already held", err)
		}
		wire := string(h.Wire.Last().RespBody.Bytes())
		for _, secret := range []string{holder.ID, "secret", string(mwtest.TaskOf(first[0]))} {
			if strings.Contains(wire, secret) {
				t.Fatalf("refusal %q reveals %q of the holder", wire, secret)
			}
		}
		if a, b := h.Agent.RunsOf(holder.ID), h.Agent.RunsOf(other.ID); a != 1 || b != 0 {
			t.Fatalf("agent runs: holder %d, other %d; want 1 and 0", a, b)
		}
		h.ExpectOutcomes(middleware.OutcomeClaimed, middleware.OutcomeConflict)
	})
}

func TestMalformedKeysAreRefused(t *testing.T) {
	cases := []struct {
		name  string
		value any
		want  error
	}{
		{"too short", "abc", idempotency.ErrKeyTooShort},
		{"too long", strings.Repeat("a", 256), idempotency.ErrKeyTooLong},
		{"bad character", "0123456789abcdef 01", idempotency.ErrKeyInvalidCharacter},
		{"number", 42, idempotency.ErrKeyNotString},
		{"null", nil, idempotency.ErrKeyNotString},
		{"object", map[string]any{"key": "0123456789abcdef"}, idempotency.ErrKeyNotString},
	}
	eachMode(t, mwtest.Config{}, func(t *testing.T, m mwtest.Mode, h *mwtest.Harness, c *a2aclient.Client) {
		for _, tc := range cases {
			msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo "+tc.name))
			msg.Metadata = map[string]any{idempotency.MetadataKey: tc.value}
			evs, err := mwtest.Send(context.Background(), c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
			if !errors.Is(err, a2a.ErrInvalidParams) {
				t.Fatalf("%s: events %v, error %v; want ErrInvalidParams", tc.name, evs, err)
			}
			if !strings.Contains(err.Error(), tc.want.Error()) {
				t.Fatalf("%s: error %q, want %q", tc.name, err, tc.want)
			}
			if n := h.Agent.RunsOf(msg.ID); n != 0 {
				t.Fatalf("%s: agent ran %d times", tc.name, n)
			}
		}
		for _, o := range h.Outcomes() {
			if o != middleware.OutcomeRefused {
				t.Fatalf("observed %v, want only refusals", h.Outcomes())
			}
		}
	})
}

func TestMessageReplyIsReplayed(t *testing.T) {
	eachMode(t, mwtest.Config{}, func(t *testing.T, m mwtest.Mode, h *mwtest.Harness, c *a2aclient.Client) {
		ctx := context.Background()
		msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "reply please")
		first, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
		if err != nil || len(first) != 1 {
			t.Fatalf("first send: %v, %v", first, err)
		}
		reply, ok := first[0].(*a2a.Message)
		if !ok {
			t.Fatalf("first send: %#v, want a Message", first[0])
		}
		for _, streaming := range []bool{m.Streaming, !m.Streaming} {
			retry, err := mwtest.Send(ctx, c, streaming, &a2a.SendMessageRequest{Message: msg})
			if err != nil || len(retry) != 1 {
				t.Fatalf("retry (streaming=%v): %v, %v", streaming, retry, err)
			}
			again, ok := retry[0].(*a2a.Message)
			if !ok || again.ID != reply.ID || again.Parts[0].Text() != reply.Parts[0].Text() || again.ContextID != reply.ContextID {
				t.Fatalf("retry (streaming=%v): %#v, want the reply %#v", streaming, retry[0], reply)
			}
		}
		h.ExpectRanOnce(t, msg.ID)
	})
}

func TestFailureBeforeTaskReleasesKey(t *testing.T) {
	eachMode(t, mwtest.Config{}, func(t *testing.T, m mwtest.Mode, h *mwtest.Harness, c *a2aclient.Client) {
		ctx := context.Background()
		msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "fail first")
		if evs, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg}); err == nil {
			t.Fatalf("first send: %v, want an error", evs)
		}
		evs, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
		if err != nil || mwtest.TaskOf(evs[0]) == "" || mwtest.FinalState(evs) != a2a.TaskStateCompleted {
			t.Fatalf("identical retry: %v, %v; want a completed task", evs, err)
		}
		if n := h.Agent.RunsOf(msg.ID); n != 2 {
			t.Fatalf("agent ran %d times, want 2 (failed, then the retry)", n)
		}
		h.ExpectOutcomes(middleware.OutcomeReleased, middleware.OutcomeClaimed)
	})
}

// A retry whose task was deleted gets TaskNotFound once the claim is older than its
// lease; within the lease, a missing task may simply not be stored yet (a2a-go stores
// it at the agent's first event), so the retry is answered 409 instead.
func TestRetryAfterTaskDeletedGetsTaskNotFound(t *testing.T) {
	const lease = 300 * time.Millisecond
	eachMode(t, mwtest.Config{Opts: middleware.Options{Lease: lease}}, func(t *testing.T, m mwtest.Mode, h *mwtest.Harness, c *a2aclient.Client) {
		ctx := context.Background()
		msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo to be deleted")
		first, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			t.Fatalf("first send: %v", err)
		}
		// Once the execution has ended (a2a-go serves a subscription from a
		// running execution, not from the store), delete the task.
		mwtest.WaitInactive(t, c, mwtest.TaskOf(first[0]))
		h.Store.Delete(mwtest.TaskOf(first[0]))
		time.Sleep(lease)
		evs, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
		if !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Fatalf("retry after deletion: %v, %v; want ErrTaskNotFound", evs, err)
		}
		h.ExpectRanOnce(t, msg.ID)
	})
}

// (A2A v0.3 has no tenant.)
func TestSameKeyInTwoTenantsMakesTwoTasks(t *testing.T) {
	for _, m := range mwtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			h := mwtest.New(t, mwtest.Config{})
			ctx := context.Background()
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo tenants")
			var ids []a2a.TaskID
			for _, tenant := range []string{"acme", "globex", "acme"} {
				evs, err := mwtest.Send(ctx, h.Client(m.Dialect, tenant, ""), m.Streaming, &a2a.SendMessageRequest{Message: msg})
				if err != nil {
					t.Fatalf("tenant %s: %v", tenant, err)
				}
				ids = append(ids, mwtest.TaskOf(evs[0]))
			}
			if ids[0] == ids[1] || ids[0] != ids[2] {
				t.Fatalf("tasks %v: want two tasks, the first replayed for its tenant", ids)
			}
			if n := h.Agent.RunsOf(msg.ID); n != 2 {
				t.Fatalf("agent ran %d times, want 2", n)
			}
			scopes := map[string]bool{}
			for _, e := range h.Events() {
				scopes[e.Scope] = true
			}
			if len(scopes) != 2 || !scopes["acme"] || !scopes["globex"] {
				t.Fatalf("observed scopes %v", scopes)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// storeReader is a TaskReader over the harness's task store.
type storeReader struct{ h *mwtest.Harness }

func (s storeReader) ReadTask(ctx context.Context, r *http.Request, tenant, taskID string) ([]byte, error) {
	st, err := s.h.Store.Get(ctx, a2a.TaskID(taskID))
	if errors.Is(err, a2a.ErrTaskNotFound) {
		return nil, fmt.Errorf("task %s: %w", taskID, middleware.ErrTaskNotFound)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(st.Task)
}

// With Options.Tasks, replays read tasks through it, not through the wrapped handler.
func TestReplayThroughTaskReader(t *testing.T) {
	const lease = 300 * time.Millisecond
	cfg := mwtest.Config{Record: true, Opts: middleware.Options{Lease: lease},
		Tasks: func(h *mwtest.Harness) middleware.TaskSource { return storeReader{h} }}
	eachMode(t, cfg, func(t *testing.T, m mwtest.Mode, h *mwtest.Harness, c *a2aclient.Client) {
		ctx := context.Background()
		msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo through the reader")
		first, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			t.Fatalf("first send: %v", err)
		}
		id := mwtest.TaskOf(first[0])
		retry, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{HistoryLength: ptr(0)}})
		if err != nil {
			t.Fatalf("retry: %v", err)
		}
		task, ok := retry[0].(*a2a.Task)
		if !ok || task.ID != id || task.Status.State != a2a.TaskStateCompleted || len(task.History) != 0 ||
			len(task.Artifacts) != 1 || task.Artifacts[0].Parts[0].Text() != "echo: echo through the reader" {
			t.Fatalf("retry: %#v, want task %s completed with its artifact, without history", retry[0], id)
		}
		for _, x := range h.Received.Exchanges() {
			read := x.Method == "GET" && !strings.HasSuffix(x.Path, ":subscribe") // v0.3 subscribes with GET
			if read || strings.Contains(string(x.ReqBody), `"GetTask"`) || strings.Contains(string(x.ReqBody), `"tasks/get"`) {
				t.Fatalf("the wrapped handler was asked for the task: %s %s %s", x.Method, x.Path, x.ReqBody)
			}
		}
		mwtest.WaitInactive(t, c, id)
		h.Store.Delete(id)
		time.Sleep(lease) // within the lease a missing task may not be stored yet
		if _, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg}); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Fatalf("retry after deletion: %v, want ErrTaskNotFound", err)
		}
		h.ExpectRanOnce(t, msg.ID)
	})
}

// One middleware in front of a server that serves every dialect: a key claimed
// through one dialect is honoured when the retry comes through another, in both
// directions between A2A v1.0 and v0.3 (the default scope is the tenant, which the
// v1.0 clients here leave empty and v0.3 has not), and the retry gets the task, or
// the first attempt's Message reply, in its own dialect's shape.
func TestRetryThroughOtherDialect(t *testing.T) {
	h := mwtest.New(t, mwtest.Config{})
	ctx := context.Background()
	for _, first := range mwtest.Dialects {
		for _, retry := range mwtest.Dialects {
			if retry == first {
				continue
			}
			t.Run(first.String()+"→"+retry.String(), func(t *testing.T) {
				msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo across dialects")
				evs, err := mwtest.Send(ctx, h.Client(first, "", ""), false, &a2a.SendMessageRequest{Message: msg})
				if err != nil {
					t.Fatal(err)
				}
				id := mwtest.TaskOf(evs[0])
				for _, streaming := range []bool{false, true} {
					again, err := mwtest.Send(ctx, h.Client(retry, "", ""), streaming, &a2a.SendMessageRequest{Message: msg})
					if err != nil || len(again) == 0 {
						t.Fatalf("retry (streaming=%v): %v, %v", streaming, again, err)
					}
					task, ok := again[0].(*a2a.Task)
					if !ok || task.ID != id || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 ||
						task.Artifacts[0].Parts[0].Text() != "echo: echo across dialects" || len(task.History) != 1 || task.History[0].ID != msg.ID {
						t.Fatalf("retry (streaming=%v): first event %#v, want completed task %s with its artifact and history", streaming, again[0], id)
					}
				}
				h.ExpectRanOnce(t, msg.ID)

				// A Message reply recorded through one dialect is stored as v1.0 JSON and
				// answered in the other's shape.
				ask := mwtest.KeyedMessage(t, idempotency.NewKey(), "reply across dialects")
				ask.Metadata["trace"] = map[string]any{"n": 1.5, "tags": []any{"a", "b"}}
				evs, err = mwtest.Send(ctx, h.Client(first, "", ""), false, &a2a.SendMessageRequest{Message: ask})
				if err != nil {
					t.Fatal(err)
				}
				reply := evs[0].(*a2a.Message)
				for _, streaming := range []bool{false, true} {
					again, err := mwtest.Send(ctx, h.Client(retry, "", ""), streaming, &a2a.SendMessageRequest{Message: ask})
					if err != nil || len(again) != 1 {
						t.Fatalf("retry of the reply (streaming=%v): %v, %v", streaming, again, err)
					}
					// (Compared as JSON: a2a-go's v0.3 client leaves an empty part
					// metadata where v1.0's has none.)
					got, ok := again[0].(*a2a.Message)
					if gj, rj := mwtest.JSONOf(t, got), mwtest.JSONOf(t, reply); !ok || gj != rj {
						t.Fatalf("retry of the reply (streaming=%v): %s, want %s", streaming, gj, rj)
					}
				}
				if n := h.Agent.RunsOf(ask.ID); n != 1 {
					t.Fatalf("agent ran %d times for the reply, want 1", n)
				}
			})
		}
	}
}
