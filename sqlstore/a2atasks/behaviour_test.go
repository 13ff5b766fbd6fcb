package a2atasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// The behaviour tests run the same cases on a2a-go's in-memory store and on the SQL
// store. Each case asserts what a2a-go's store does, and records every answer it got
// (JSON of the result, or the error text) in a transcript; the SQL tests then require
// the SQL store's transcript to equal the in-memory store's, byte for byte, page
// tokens included (both stores run on the same fake clock).

// newStoreFunc returns a fresh, empty store whose owners come from ownerOf and whose
// clock is now.
type newStoreFunc func(t *testing.T, now func() time.Time) taskstore.Store

type ownerKey struct{}

// as returns a context whose caller is the owner name.
func as(name string) context.Context {
	return context.WithValue(context.Background(), ownerKey{}, name)
}

// ownerOf is the stores' authenticator: the name as() attached, "" without one.
func ownerOf(ctx context.Context) (string, error) {
	name, _ := ctx.Value(ownerKey{}).(string)
	return name, nil
}

func newInMemory(t *testing.T, now func() time.Time) taskstore.Store {
	return taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{Authenticator: ownerOf, TimeProvider: now})
}

// fakeClock advances by a millisecond at every reading, so that every write has its
// own time and both stores order tasks alike.
func fakeClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Millisecond)
		return t
	}
}

// transcript records the answers of one run of a case.
type transcript struct {
	t     *testing.T
	lines []string
}

// add records v (JSON) or err (its text) under label, and returns err.
func (tr *transcript) add(label string, v any, err error) error {
	tr.t.Helper()
	if err != nil {
		tr.lines = append(tr.lines, label+": error: "+err.Error())
		return err
	}
	b, jerr := json.Marshal(v)
	if jerr != nil {
		tr.t.Fatalf("%s: encode answer: %v", label, jerr)
	}
	tr.lines = append(tr.lines, label+": "+string(b))
	return nil
}

type behaviourCase struct {
	name string
	run  func(t *testing.T, st taskstore.Store, tr *transcript)
}

// testBehaviour runs every case on a fresh store from newStore; when compare is set,
// it runs each case on a2a-go's in-memory store too and requires equal transcripts.
func testBehaviour(t *testing.T, newStore newStoreFunc, compare bool) {
	for _, c := range behaviourCases {
		t.Run(c.name, func(t *testing.T) {
			got := &transcript{t: t}
			c.run(t, newStore(t, fakeClock()), got)
			if !compare {
				return
			}
			want := &transcript{t: t}
			c.run(t, newInMemory(t, fakeClock()), want)
			if !slices.Equal(got.lines, want.lines) {
				for i := range max(len(got.lines), len(want.lines)) {
					g, w := at(got.lines, i), at(want.lines, i)
					if g != w {
						t.Errorf("answer %d differs from a2a-go's in-memory store:\n got: %s\nwant: %s", i, g, w)
					}
				}
			}
		})
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}

// wireTask returns a task with history, artifacts of several part kinds, nested
// metadata and a status timestamp, as it arrives from the wire (decoded from JSON).
func wireTask(t *testing.T, id, contextID string, state a2a.TaskState, at time.Time) *a2a.Task {
	t.Helper()
	ts := at
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello "+id), a2a.NewDataPart(map[string]any{"n": 1.5, "list": []any{"a", 2}}))
	msg.ID, msg.Metadata = "msg-"+id, map[string]any{"a2a-rust.com/idempotency-key": "k-" + id}
	reply := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("héllo, wörld ✓ "+id), a2a.NewFileURLPart("https://example.com/f.txt", "text/plain"))
	reply.ID = "reply-" + id
	task := &a2a.Task{
		ID:        a2a.TaskID(id),
		ContextID: contextID,
		Status:    a2a.TaskStatus{State: state, Message: reply, Timestamp: &ts},
		History:   []*a2a.Message{msg, reply},
		Artifacts: []*a2a.Artifact{{ID: "art-1", Name: "result", Parts: a2a.ContentParts{a2a.NewTextPart("42"), a2a.NewRawPart([]byte{0, 1, 2, 255})}, Metadata: map[string]any{"k": "v"}}},
		Metadata:  map[string]any{"nested": map[string]any{"deep": []any{true, nil, "x", 3.25}}, "big": 9007199254740991.0},
	}
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	var wire a2a.Task
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	return &wire
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustCreate(t *testing.T, st taskstore.Store, ctx context.Context, task *a2a.Task) taskstore.TaskVersion {
	t.Helper()
	v, err := st.Create(ctx, task)
	if err != nil {
		t.Fatalf("Create(%s): %v", task.ID, err)
	}
	return v
}

func mustUpdate(t *testing.T, st taskstore.Store, ctx context.Context, task *a2a.Task, prev taskstore.TaskVersion) taskstore.TaskVersion {
	t.Helper()
	v, err := st.Update(ctx, &taskstore.UpdateRequest{Task: task, Event: task, PrevVersion: prev})
	if err != nil {
		t.Fatalf("Update(%s, prev %d): %v", task.ID, prev, err)
	}
	return v
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want %v", what, err, want)
	}
}

var t0 = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)

var behaviourCases = []behaviourCase{
	{"CreateGetRoundTrip", func(t *testing.T, st taskstore.Store, tr *transcript) {
		alice := as("alice")
		task := wireTask(t, "task-1", "ctx-1", a2a.TaskStateWorking, t0)
		in := mustJSON(t, task)
		v := mustCreate(t, st, alice, task)
		tr.add("create", v, nil)
		got, err := st.Get(alice, "task-1")
		if tr.add("get", got, err) != nil {
			t.Fatalf("Get: %v", err)
		}
		if out := mustJSON(t, got.Task); out != in {
			t.Errorf("the task did not round-trip byte-identical as JSON:\n got: %s\nwant: %s", out, in)
		}
		if got.Version != v || got.User != "alice" {
			t.Errorf("Get: version %d user %q, want %d alice", got.Version, got.User, v)
		}
		// The stored task is a copy: changing the caller's task changes nothing stored.
		task.History[0].Parts[0] = a2a.NewTextPart("changed")
		got, _ = st.Get(alice, "task-1")
		if out := mustJSON(t, got.Task); out != in {
			t.Errorf("the stored task changed with the caller's copy")
		}
	}},
	{"CreateTwice", func(t *testing.T, st taskstore.Store, tr *transcript) {
		alice := as("alice")
		mustCreate(t, st, alice, wireTask(t, "task-1", "c", a2a.TaskStateSubmitted, t0))
		_, err := st.Create(alice, wireTask(t, "task-1", "c2", a2a.TaskStateWorking, t0))
		tr.add("create again", nil, err)
		wantErr(t, "Create of an existing id", err, taskstore.ErrTaskAlreadyExists)
		_, err = st.Create(as("bob"), wireTask(t, "task-1", "c2", a2a.TaskStateWorking, t0))
		wantErr(t, "Create of an existing id by another owner", err, taskstore.ErrTaskAlreadyExists)
	}},
	{"Missing", func(t *testing.T, st taskstore.Store, tr *transcript) {
		alice := as("alice")
		_, err := st.Get(alice, "nope")
		tr.add("get", nil, err)
		wantErr(t, "Get of a missing task", err, a2a.ErrTaskNotFound)
		task := wireTask(t, "nope", "c", a2a.TaskStateWorking, t0)
		_, err = st.Update(alice, &taskstore.UpdateRequest{Task: task, PrevVersion: 1})
		tr.add("update", nil, err)
		wantErr(t, "Update of a missing task", err, a2a.ErrTaskNotFound)
	}},
	{"UpdateChain", func(t *testing.T, st taskstore.Store, tr *transcript) {
		alice := as("alice")
		task := wireTask(t, "task-1", "ctx-1", a2a.TaskStateSubmitted, t0)
		v := mustCreate(t, st, alice, task)
		versions := []taskstore.TaskVersion{v}
		for i, state := range []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateWorking, a2a.TaskStateCompleted} {
			next := wireTask(t, "task-1", "ctx-1", state, t0.Add(time.Duration(i+1)*time.Second))
			step := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(fmt.Sprint("step ", i)))
			step.ID = fmt.Sprint("step-", i)
			next.History = append(next.History, step)
			nv := mustUpdate(t, st, alice, next, v)
			if !nv.After(v) {
				t.Errorf("update %d: version %d is not after %d", i, nv, v)
			}
			v = nv
			versions = append(versions, v)
			got, err := st.Get(alice, "task-1")
			tr.add(fmt.Sprint("get ", i), got, err)
			if err != nil || mustJSON(t, got.Task) != mustJSON(t, next) || got.Version != v {
				t.Errorf("update %d: Get returned %v (version %v), %v", i, got, v, err)
			}
		}
		tr.add("versions", versions, nil)
		// A stale version is refused, the missing version is not.
		stale := wireTask(t, "task-1", "ctx-1", a2a.TaskStateFailed, t0)
		_, err := st.Update(alice, &taskstore.UpdateRequest{Task: stale, PrevVersion: versions[1]})
		tr.add("stale", nil, err)
		wantErr(t, "Update from a stale version", err, taskstore.ErrConcurrentModification)
		nv, err := st.Update(alice, &taskstore.UpdateRequest{Task: stale, PrevVersion: taskstore.TaskVersionMissing})
		tr.add("unversioned", nv, err)
		if err != nil {
			t.Errorf("Update without a version: %v", err)
		}
	}},
	{"ConcurrentUpdates", func(t *testing.T, st taskstore.Store, tr *transcript) {
		alice := as("alice")
		v := mustCreate(t, st, alice, wireTask(t, "task-1", "c", a2a.TaskStateSubmitted, t0))
		const n = 16
		errs := make(chan error, n)
		start := make(chan struct{})
		for i := range n {
			go func() {
				<-start
				_, err := st.Update(alice, &taskstore.UpdateRequest{
					Task:        wireTask(t, "task-1", "c", a2a.TaskStateWorking, t0.Add(time.Duration(i)*time.Second)),
					PrevVersion: v,
				})
				errs <- err
			}()
		}
		close(start)
		won, lost := 0, 0
		for range n {
			switch err := <-errs; {
			case err == nil:
				won++
			case errors.Is(err, taskstore.ErrConcurrentModification):
				lost++
			default:
				t.Errorf("concurrent Update: %v", err)
			}
		}
		tr.add("won, lost", []int{won, lost}, nil)
		if won != 1 || lost != n-1 {
			t.Errorf("%d concurrent updates from one version: %d won, %d got ErrConcurrentModification; want 1 and %d", n, won, lost, n-1)
		}
		got, err := st.Get(alice, "task-1")
		if err != nil || got.Version != v+1 {
			t.Errorf("after the race: version %v, %v; want %d", got, err, v+1)
		}
	}},
	{"Owners", func(t *testing.T, st taskstore.Store, tr *transcript) {
		alice, bob := as("alice"), as("bob")
		mustCreate(t, st, alice, wireTask(t, "task-a", "c", a2a.TaskStateWorking, t0))
		_, err := st.Get(bob, "task-a")
		tr.add("bob get", nil, err)
		wantErr(t, "Get of another owner's task", err, a2a.ErrTaskNotFound)
		_, err = st.Update(bob, &taskstore.UpdateRequest{Task: wireTask(t, "task-a", "c", a2a.TaskStateFailed, t0)})
		tr.add("bob update", nil, err)
		wantErr(t, "Update of another owner's task", err, a2a.ErrTaskNotFound)
		mustCreate(t, st, bob, wireTask(t, "task-b", "c", a2a.TaskStateWorking, t0))
		res, err := st.List(bob, &a2a.ListTasksRequest{})
		tr.add("bob list", res, err)
		if err != nil || len(res.Tasks) != 1 || res.Tasks[0].ID != "task-b" || res.TotalSize != 1 {
			t.Errorf("bob's List: %v, %v; want task-b alone", res, err)
		}
		_, err = st.List(context.Background(), &a2a.ListTasksRequest{})
		tr.add("anonymous list", nil, err)
		wantErr(t, "List without an owner", err, a2a.ErrUnauthenticated)
		// The anonymous owner "" may create and read its own tasks.
		mustCreate(t, st, context.Background(), wireTask(t, "task-0", "c", a2a.TaskStateWorking, t0))
		got, err := st.Get(context.Background(), "task-0")
		tr.add("anonymous get", got, err)
	}},
	{"ListFiltersAndPages", func(t *testing.T, st taskstore.Store, tr *transcript) {
		alice := as("alice")
		// Five tasks in two contexts and three states; task-3 has no status timestamp.
		for i, spec := range []struct {
			ctx   string
			state a2a.TaskState
		}{{"ctx-a", a2a.TaskStateWorking}, {"ctx-b", a2a.TaskStateCompleted}, {"ctx-a", a2a.TaskStateCompleted},
			{"ctx-b", a2a.TaskStateWorking}, {"ctx-a", a2a.TaskStateFailed}} {
			task := wireTask(t, fmt.Sprint("task-", i+1), spec.ctx, spec.state, t0.Add(time.Duration(i)*time.Hour))
			if i == 2 {
				task.Status.Timestamp = nil
			}
			mustCreate(t, st, alice, task)
		}
		mustCreate(t, st, as("bob"), wireTask(t, "task-bob", "ctx-a", a2a.TaskStateWorking, t0))
		// task-2 is updated last, so it comes first.
		mustUpdate(t, st, alice, wireTask(t, "task-2", "ctx-b", a2a.TaskStateCompleted, t0.Add(time.Hour)), 1)

		ids := func(res *a2a.ListTasksResponse) []string {
			var out []string
			for _, task := range res.Tasks {
				out = append(out, string(task.ID))
			}
			return out
		}
		after := t0.Add(2 * time.Hour)
		zero, one, all := 0, 1, -1
		for _, c := range []struct {
			name  string
			req   a2a.ListTasksRequest
			want  []string
			total int
		}{
			{"all", a2a.ListTasksRequest{}, []string{"task-2", "task-5", "task-4", "task-3", "task-1"}, 5},
			{"context", a2a.ListTasksRequest{ContextID: "ctx-a"}, []string{"task-5", "task-3", "task-1"}, 3},
			{"state", a2a.ListTasksRequest{Status: a2a.TaskStateCompleted}, []string{"task-2", "task-3"}, 2},
			{"context and state", a2a.ListTasksRequest{ContextID: "ctx-b", Status: a2a.TaskStateWorking}, []string{"task-4"}, 1},
			{"status after", a2a.ListTasksRequest{StatusTimestampAfter: &after}, []string{"task-5", "task-4", "task-3"}, 3},
			{"no match", a2a.ListTasksRequest{ContextID: "ctx-z"}, nil, 0},
			{"history 0", a2a.ListTasksRequest{ContextID: "ctx-b", HistoryLength: &zero}, []string{"task-2", "task-4"}, 2},
			{"history 1 with artifacts", a2a.ListTasksRequest{ContextID: "ctx-b", HistoryLength: &one, IncludeArtifacts: true}, []string{"task-2", "task-4"}, 2},
			{"history all", a2a.ListTasksRequest{ContextID: "ctx-b", HistoryLength: &all}, []string{"task-2", "task-4"}, 2},
		} {
			res, err := st.List(alice, &c.req)
			tr.add(c.name, res, err)
			if err != nil {
				t.Errorf("List %s: %v", c.name, err)
				continue
			}
			if !slices.Equal(ids(res), c.want) || res.TotalSize != c.total || res.NextPageToken != "" {
				t.Errorf("List %s: %v (total %d, token %q); want %v (total %d)", c.name, ids(res), res.TotalSize, res.NextPageToken, c.want, c.total)
			}
		}

		// Pages of two walk the five tasks in order, each with the total.
		var walked []string
		req := a2a.ListTasksRequest{PageSize: 2}
		for page := 0; ; page++ {
			res, err := st.List(alice, &req)
			tr.add(fmt.Sprint("page ", page), res, err)
			if err != nil {
				t.Fatalf("List page %d: %v", page, err)
			}
			if res.TotalSize != 5 || res.PageSize != 2 {
				t.Errorf("page %d: total %d page size %d, want 5 and 2", page, res.TotalSize, res.PageSize)
			}
			walked = append(walked, ids(res)...)
			if res.NextPageToken == "" {
				break
			}
			if page > 5 {
				t.Fatal("the pages do not end")
			}
			req.PageToken = res.NextPageToken
		}
		if want := []string{"task-2", "task-5", "task-4", "task-3", "task-1"}; !slices.Equal(walked, want) {
			t.Errorf("pages walked %v, want %v", walked, want)
		}

		for _, c := range []struct {
			name string
			req  a2a.ListTasksRequest
			want error
		}{
			{"page size 101", a2a.ListTasksRequest{PageSize: 101}, a2a.ErrInvalidRequest},
			{"page size -1", a2a.ListTasksRequest{PageSize: -1}, a2a.ErrInvalidRequest},
			{"bad token", a2a.ListTasksRequest{PageToken: "%%%"}, a2a.ErrParseError},
			{"token without a separator", a2a.ListTasksRequest{PageToken: "YWJj"}, a2a.ErrParseError},
		} {
			_, err := st.List(alice, &c.req)
			tr.add(c.name, nil, err)
			wantErr(t, "List "+c.name, err, c.want)
		}
	}},
	{"Validation", func(t *testing.T, st taskstore.Store, tr *transcript) {
		alice := as("alice")
		task := wireTask(t, "task-1", "c", a2a.TaskStateWorking, t0)
		task.Metadata["bad"] = uint(1)
		_, err := st.Create(alice, task)
		tr.add("create with uint metadata", nil, err)
		if err == nil {
			t.Error("Create accepted metadata a2a-go refuses")
		}
		delete(task.Metadata, "bad")
		mustCreate(t, st, alice, task)
		task.History[0].Metadata["bad"] = []string{"x"}
		_, err = st.Update(alice, &taskstore.UpdateRequest{Task: task})
		tr.add("update with []string metadata", nil, err)
		if err == nil {
			t.Error("Update accepted metadata a2a-go refuses")
		}
	}},
}

func TestInMemoryBehaviour(t *testing.T) {
	testBehaviour(t, newInMemory, false)
}
