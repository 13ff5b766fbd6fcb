package middleware

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	legacya2a "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2apb/v0/pbjson"
)

// The v0.3 bindings convert tasks and messages between v1.0 JSON and v0.3's two
// shapes as a2a-go does (a2acompat/a2av0 for JSON-RPC, a2apb/v0/pbjson for
// HTTP+JSON), so that a v0.3 client gets from the middleware what it gets from
// a2a-go's v0.3 handlers. These tests hold the conversions to a2a-go's own, on the
// JSON they produce (compared as decoded values: key order and number spelling may
// differ, since the middleware keeps opaque values as they came).

// sameJSON reports whether a and b decode to the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// marshalOf returns the JSON of what fn returns, or false when fn panics (a2a-go's
// conversions do on a null part) or the result does not marshal.
func marshalOf(fn func() (any, error)) (out []byte, ok bool) {
	defer func() {
		if recover() != nil {
			out, ok = nil, false
		}
	}()
	v, err := fn()
	if err != nil {
		return nil, false
	}
	out, err = json.Marshal(v)
	return out, err == nil
}

// A conversion is one of the middleware's conversions and a2a-go's counterpart.
type conversion struct {
	name   string
	want   func() (any, error)    // a2a-go's conversion of the decoded data
	got    func() ([]byte, error) // the middleware's conversion of the data
	decode func() error           // decodes the data as a2a-go does, for want
}

// checkConversions fails when a conversion of data differs from a2a-go's: data read
// as a v1.0 task or message and converted to v0.3 (both shapes), and data read as a
// v0.3 task or message (both shapes) and converted to v1.0. Data that a2a-go does not
// decode is not checked in that direction.
func checkConversions(t *testing.T, data []byte) {
	t.Helper()
	var cases []conversion
	var task a2a.Task
	var msg a2a.Message
	var legacyTask legacya2a.Task
	var legacyMsg legacya2a.Message
	cases = append(cases,
		conversion{"v1.0 task to JSON-RPC v0.3",
			func() (any, error) { return a2av0.FromV1Task(&task), nil },
			func() ([]byte, error) { return convertJSON(data, v1TaskToKind) },
			func() error { return json.Unmarshal(data, &task) }},
		conversion{"v1.0 task to HTTP+JSON v0.3",
			func() (any, error) {
				b, err := pbjson.ToProtoTask(&task)
				return json.RawMessage(b), err
			},
			func() ([]byte, error) { return convertJSON(data, v1TaskToPB) },
			func() error { return json.Unmarshal(data, &task) }},
		conversion{"v1.0 message to JSON-RPC v0.3",
			func() (any, error) { return a2av0.FromV1Message(&msg), nil },
			func() ([]byte, error) { return convertJSON(data, v1MessageToKind) },
			func() error { return json.Unmarshal(data, &msg) }},
		conversion{"v1.0 message to HTTP+JSON v0.3",
			func() (any, error) {
				b, err := pbjson.ToProtoSendMessageResult(&msg)
				var v struct{ Message json.RawMessage }
				if err == nil {
					err = json.Unmarshal(b, &v)
				}
				return v.Message, err
			},
			func() ([]byte, error) { return convertJSON(data, v1MessageToPB) },
			func() error { return json.Unmarshal(data, &msg) }},
		conversion{"JSON-RPC v0.3 task to v1.0",
			func() (any, error) { return a2av0.ToV1Task(&legacyTask) },
			func() ([]byte, error) { return convertJSON(data, kindTaskToV1) },
			func() error { return json.Unmarshal(data, &legacyTask) }},
		conversion{"JSON-RPC v0.3 message to v1.0",
			func() (any, error) { return a2av0.ToV1Message(&legacyMsg) },
			func() ([]byte, error) { return convertJSON(data, kindMessageToV1) },
			func() error { return json.Unmarshal(data, &legacyMsg) }},
		conversion{"HTTP+JSON v0.3 task to v1.0",
			func() (any, error) { return pbjson.FromProtoTask(data) },
			func() ([]byte, error) { return convertJSON(data, pbTaskToV1) },
			func() error { return nil }},
		conversion{"HTTP+JSON v0.3 message to v1.0",
			func() (any, error) {
				return pbjson.FromProtoSendMessageResponse(append(append([]byte(`{"message":`), data...), '}'))
			},
			func() ([]byte, error) { return convertJSON(data, pbMessageToV1) },
			func() error { return nil }},
	)
	for _, tc := range cases {
		if tc.decode() != nil {
			continue
		}
		want, ok := marshalOf(tc.want)
		if !ok || string(want) == "null" {
			continue
		}
		got, err := tc.got()
		if err != nil {
			t.Fatalf("%s of %s: %v; a2a-go converts it to %s", tc.name, data, err, want)
		}
		if !sameJSON(got, want) {
			t.Fatalf("%s of %s:\n got %s\nwant %s", tc.name, data, got, want)
		}
	}
}

// conversionSamples returns tasks and messages with every kind of part, state and
// role, as v1.0 JSON and in v0.3's two shapes.
func conversionSamples(t testing.TB) [][]byte {
	ts := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.FixedZone("X", 3600))
	raw := a2a.NewRawPart([]byte("raw \x00 bytes"))
	raw.Filename, raw.MediaType = "r.bin", "application/octet-stream"
	text := a2a.NewTextPart("hello <&>")
	text.Metadata = map[string]any{"k": "v"}
	compat := a2a.NewDataPart(map[string]any{"value": 1.0})
	compat.Metadata = map[string]any{dataPartCompat: true, "other": 2.0}
	parts := []*a2a.Part{text, raw, a2a.NewFileURLPart("https://example.com/f.pdf", "application/pdf"),
		a2a.NewDataPart(map[string]any{"n": 1.5, "l": []any{"a"}}), a2a.NewDataPart([]any{1.0, "x"}),
		a2a.NewDataPart("s"), a2a.NewDataPart(42.0), compat}
	msg := &a2a.Message{ID: "m1", ContextID: "c1", TaskID: "t1", Role: a2a.MessageRoleAgent, Parts: parts,
		Metadata:   map[string]any{"big": 12345678901234567890.0, "nested": map[string]any{"x": nil}},
		Extensions: []string{"https://ext"}, ReferenceTasks: []a2a.TaskID{"r1"}}
	var samples []any
	for _, state := range []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted, a2a.TaskStateFailed,
		a2a.TaskStateCanceled, a2a.TaskStateInputRequired, a2a.TaskStateRejected, a2a.TaskStateAuthRequired, a2a.TaskStateUnspecified} {
		samples = append(samples, &a2a.Task{ID: "t1", ContextID: "c1", Metadata: map[string]any{"m": true},
			Status:    a2a.TaskStatus{State: state, Timestamp: &ts, Message: &a2a.Message{ID: "s1", Role: a2a.MessageRoleAgent, Parts: parts[:1]}},
			Artifacts: []*a2a.Artifact{{ID: "a1", Name: "n", Description: "d", Extensions: []string{"e"}, Metadata: map[string]any{"k": 1.0}, Parts: parts}},
			History:   []*a2a.Message{msg, {ID: "u1", Role: a2a.MessageRoleUser, Parts: parts[:1]}, {ID: "x", Parts: parts[:1]}}})
	}
	samples = append(samples, msg, &a2a.Task{ID: "bare", ContextID: "c"}, &a2a.Message{ID: "empty", Role: a2a.MessageRoleUser})
	var out [][]byte
	for _, s := range samples {
		v1, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v1)
		var legacy any
		var pb []byte
		switch v := s.(type) {
		case *a2a.Task:
			legacy = a2av0.FromV1Task(v)
			pb, err = pbjson.ToProtoTask(v)
		case *a2a.Message:
			legacy = a2av0.FromV1Message(v)
			var r struct{ Message json.RawMessage }
			pb, err = pbjson.ToProtoSendMessageResult(v)
			if err == nil {
				err = json.Unmarshal(pb, &r)
			}
			pb = r.Message
		}
		if err != nil {
			t.Fatal(err)
		}
		kind, err := json.Marshal(legacy)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, kind, pb)
	}
	return out
}

func TestConversionsAgreeWithA2AGo(t *testing.T) {
	samples := conversionSamples(t)
	for _, data := range samples {
		checkConversions(t, data)
	}
	// A round trip v1.0 → v0.3 → v1.0 ends where a2a-go's ends: where it started,
	// but for what a2a-go's conversions lose or change (a data part marked
	// data_part_compat by its sender; a message's referenceTaskIds in proto JSON).
	var task a2a.Task
	if err := json.Unmarshal(samples[0], &task); err != nil {
		t.Fatal(err)
	}
	kind, err := convertJSON(samples[0], v1TaskToKind)
	if err != nil {
		t.Fatal(err)
	}
	back, err := convertJSON(kind, kindTaskToV1)
	want, ok := marshalOf(func() (any, error) { return a2av0.ToV1Task(a2av0.FromV1Task(&task)) })
	if err != nil || !ok || !sameJSON(back, want) {
		t.Fatalf("v1.0 → v0.3 → v1.0:\n got %s (%v)\nwant %s", back, err, want)
	}
	pb, err := convertJSON(samples[0], v1TaskToPB)
	if err != nil {
		t.Fatal(err)
	}
	back, err = convertJSON(pb, pbTaskToV1)
	want, ok = marshalOf(func() (any, error) {
		b, err := pbjson.ToProtoTask(&task)
		if err != nil {
			return nil, err
		}
		return pbjson.FromProtoTask(b)
	})
	if err != nil || !ok || !sameJSON(back, want) {
		t.Fatalf("v1.0 → proto v0.3 → v1.0:\n got %s (%v)\nwant %s", back, err, want)
	}
	if sameJSON(back, samples[0]) {
		t.Fatal("the proto round trip kept referenceTaskIds, which a2a-go drops: the samples miss them")
	}
}

func FuzzConversions(f *testing.F) {
	for _, s := range conversionSamples(f) {
		f.Add(s)
	}
	for _, s := range []string{
		`{"id":"t","status":{"state":"unknown"},"history":[null],"artifacts":[null]}`,
		`{"kind":5,"messageId":"m","parts":[{"kind":"data","data":null,"metadata":{"data_part_compat":true}}]}`,
		`{"messageId":"m","parts":[{"kind":"file","file":{"bytes":"not base64!"}}]}`,
		`{"messageId":"m","content":[{"file":{"fileWithBytes":"bm90IGJhc2U2NCE="}},{"data":{}},{}]}`,
		`{"messageId":"m","parts":[{"url":""},{"text":"t","url":""}]}`,
		`{"id":"t","status":{"state":"TASK_STATE_CANCELLED","timestamp":"2026-11-30T12:00:00+05:00"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkConversions(t, data)
	})
}
