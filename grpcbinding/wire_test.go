package grpcbinding

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1/pbconv"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2akit/idempotency"
)

// richTask is a task with every field of A2A v1.0 that a2a-go's pbconv converts set:
// the four part kinds, metadata at every level, a status message and timestamp, an
// artifact and history.
func richTask() *a2a.Task {
	at := time.Date(2026, 12, 1, 7, 40, 5, 123456000, time.UTC)
	meta := map[string]any{"trace": "abc", "n": 3.5, "nested": map[string]any{"ok": true, "list": []any{"x", 1.0}}}
	user := &a2a.Message{
		ID: "m-1", ContextID: "ctx-1", TaskID: "task-1", Role: a2a.MessageRoleUser,
		Extensions:     []string{idempotency.ExtensionURI, "https://example.com/other"},
		Metadata:       map[string]any{idempotency.MetadataKey: "0123456789abcdef0123", "x": "y"},
		ReferenceTasks: []a2a.TaskID{"task-0"},
		Parts: a2a.ContentParts{
			{Content: a2a.Text("hello"), Metadata: meta},
			{Content: a2a.Raw([]byte{0, 1, 2, 250, 251}), Filename: "b.bin", MediaType: "application/octet-stream"},
			{Content: a2a.Data{Value: map[string]any{"k": "v", "num": 42.0}}},
			{Content: a2a.URL("https://example.com/f.txt"), MediaType: "text/plain", Filename: "f.txt"},
		},
	}
	agent := &a2a.Message{ID: "m-2", ContextID: "ctx-1", TaskID: "task-1", Role: a2a.MessageRoleAgent,
		Parts: a2a.ContentParts{a2a.NewTextPart("working on it")}}
	return &a2a.Task{
		ID: "task-1", ContextID: "ctx-1",
		Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Message: agent, Timestamp: &at},
		Artifacts: []*a2a.Artifact{{ID: "art-1", Name: "echo", Description: "the echo",
			Extensions: []string{"https://example.com/art"}, Metadata: meta,
			Parts: a2a.ContentParts{a2a.NewTextPart("echo: hello")}}},
		History:  []*a2a.Message{user, agent},
		Metadata: meta,
	}
}

// TestTaskJSONIsPbconv checks the premise of the JSON glue on a task: the A2A JSON
// a2a-go writes for a task (encoding/json of *a2a.Task, what the HTTP bindings and
// adapter.TaskReader serve) decodes with protojson to exactly the proto a2a-go's pbconv
// makes of the same task, and protojson's JSON of that proto decodes with
// encoding/json to the same *a2a.Task.
func TestTaskJSONIsPbconv(t *testing.T) {
	task := richTask()
	want, err := pbconv.ToProtoTask(task)
	if err != nil {
		t.Fatal(err)
	}
	got := protoOfJSON(t, task, want)

	back, err := unmarshalA2A[a2a.Task](t, got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, task) {
		t.Fatalf("encoding/json of protojson's JSON differs from the task:\n got %+v\nwant %+v", back, task)
	}
}

// protoOfJSON returns protojson's decoding of the JSON a2a-go writes for v
// (encoding/json's), failing t unless it is want, the proto pbconv makes of v.
func protoOfJSON[T any, P interface {
	*T
	proto.Message
}](t *testing.T, v any, want P) P {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fromJSON[T, P](raw)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("protojson of a2a-go's JSON differs from pbconv:\n got %v\nwant %v", got, want)
	}
	return got
}

// TestMessageJSONIsPbconv checks the same for a Message reply, in the compact form
// marshalJSON binds, and that this form is stable across calls.
func TestMessageJSONIsPbconv(t *testing.T) {
	msg := richTask().History[0]
	res, err := pbconv.ToProtoStreamResponse(msg)
	if err != nil {
		t.Fatal(err)
	}
	want := res.GetMessage()
	protoOfJSON(t, msg, want)
	compact, err := marshalJSON(want)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again, err := marshalJSON(want)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(compact) {
			t.Fatalf("marshalJSON is not stable:\n%s\n%s", again, compact)
		}
	}
	var back a2a.Message
	if err := json.Unmarshal(compact, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, msg) {
		t.Fatalf("encoding/json of marshalJSON differs from the message:\n got %+v\nwant %+v", &back, msg)
	}
}

// TestFromJSONIgnoresUnknownFields: a field a later A2A version adds must not fail a
// replay, as it does not fail a2a-go's HTTP handlers.
func TestFromJSONIgnoresUnknownFields(t *testing.T) {
	m, err := fromJSON[a2apb.Message]([]byte(`{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}],"future":{"a":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.GetMessageId() != "m" || m.GetParts()[0].GetText() != "x" {
		t.Fatalf("decoded %v", m)
	}
	if _, err := fromJSON[a2apb.Task]([]byte(`{"id":`)); err == nil || !strings.Contains(err.Error(), "Task") {
		t.Fatalf("truncated JSON: err = %v, want an error naming Task", err)
	}
}

func TestKeyOf(t *testing.T) {
	key := "0123456789abcdef"
	tests := []struct {
		name     string
		metadata map[string]any
		want     string
		wantErr  error
	}{
		{name: "no metadata"},
		{name: "no entry", metadata: map[string]any{"trace": "x"}},
		{name: "key", metadata: map[string]any{idempotency.MetadataKey: key}, want: key},
		{name: "number", metadata: map[string]any{idempotency.MetadataKey: 42}, wantErr: idempotency.ErrKeyNotString},
		{name: "null", metadata: map[string]any{idempotency.MetadataKey: nil}, wantErr: idempotency.ErrKeyNotString},
		{name: "object", metadata: map[string]any{idempotency.MetadataKey: map[string]any{}}, wantErr: idempotency.ErrKeyNotString},
		{name: "short", metadata: map[string]any{idempotency.MetadataKey: "short"}, wantErr: idempotency.ErrKeyTooShort},
		{name: "long", metadata: map[string]any{idempotency.MetadataKey: strings.Repeat("a", 256)}, wantErr: idempotency.ErrKeyTooLong},
		{name: "character", metadata: map[string]any{idempotency.MetadataKey: key + " x"}, wantErr: idempotency.ErrKeyInvalidCharacter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := &a2apb.Message{MessageId: "m"}
			if tt.metadata != nil {
				s, err := structpb.NewStruct(tt.metadata)
				if err != nil {
					t.Fatal(err)
				}
				msg.Metadata = s
			}
			got, ok, err := keyOf(msg)
			// The HTTP bindings read the key with idempotency.KeyOf: both agree.
			wantKey, wantOK, wantErr := idempotency.KeyOf(normalized(tt.metadata))
			if got != wantKey || ok != wantOK || !errors.Is(err, wantErr) && err != wantErr {
				t.Fatalf("keyOf = %q, %v, %v; idempotency.KeyOf = %q, %v, %v", got, ok, err, wantKey, wantOK, wantErr)
			}
			if got != tt.want || !errors.Is(err, tt.wantErr) && err != tt.wantErr {
				t.Fatalf("keyOf = %q, %v, want %q, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// normalized is metadata as encoding/json decodes it (numbers as float64), or nil.
func normalized(m map[string]any) any {
	if m == nil {
		return nil
	}
	raw, _ := json.Marshal(m)
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

// unmarshalA2A decodes protojson's JSON of m into an a2a-go value with
// encoding/json.
func unmarshalA2A[T any](t *testing.T, m proto.Message) (*T, error) {
	t.Helper()
	raw, err := marshalJSON(m)
	if err != nil {
		return nil, err
	}
	out := new(T)
	return out, json.Unmarshal(raw, out)
}
