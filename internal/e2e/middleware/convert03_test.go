package middleware_test

import (
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	legacya2a "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2apb/v0/pbjson"
)

// The middleware converts tasks and messages between v1.0 JSON and v0.3's two shapes
// as a2a-go does (a2acompat/a2av0 for JSON-RPC, a2apb/v0/pbjson for HTTP+JSON). Its
// own tests hold its codecs to the fixture conversionsFixture, which this test
// holds to a2a-go: every want in it is what a2a-go's conversion makes of its input.
// Run with -update to write the fixture anew from a2a-go.

var update = flag.Bool("update", false, "write the middleware's JSON fixtures from a2a-go")

// conversionsFixture is the middleware's fixture of a2a-go's conversions.
const conversionsFixture = "../../../middleware/internal/v03/testdata/conversions03.json"

// conversionCase is one entry of the fixture: a conversion's name, its input, and what
// a2a-go converts it to.
type conversionCase struct {
	Conversion string          `json:"conversion"`
	In         json.RawMessage `json:"in"`
	Want       json.RawMessage `json:"want"`
}

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

// decoded is the conversion of data decoded as a T by convert: the JSON of what
// convert returns (marshalOf), or false when data does not decode as a T.
func decoded[T any](convert func(*T) (any, error)) func(data []byte) ([]byte, bool) {
	return func(data []byte) ([]byte, bool) {
		var v T
		if json.Unmarshal(data, &v) != nil {
			return nil, false
		}
		return marshalOf(func() (any, error) { return convert(&v) })
	}
}

// a2aConversions are a2a-go's conversions, by the names the fixture uses; each
// reports false for data a2a-go does not decode or convert.
var a2aConversions = map[string]func(data []byte) ([]byte, bool){
	"v1.0 task to JSON-RPC v0.3": decoded(func(task *a2a.Task) (any, error) { return a2av0.FromV1Task(task), nil }),
	"v1.0 task to HTTP+JSON v0.3": decoded(func(task *a2a.Task) (any, error) {
		b, err := pbjson.ToProtoTask(task)
		return json.RawMessage(b), err
	}),
	"v1.0 message to JSON-RPC v0.3":  decoded(func(msg *a2a.Message) (any, error) { return a2av0.FromV1Message(msg), nil }),
	"v1.0 message to HTTP+JSON v0.3": decoded(func(msg *a2a.Message) (any, error) { return protoMessage(msg) }),
	"JSON-RPC v0.3 task to v1.0":     decoded(func(task *legacya2a.Task) (any, error) { return a2av0.ToV1Task(task) }),
	"JSON-RPC v0.3 message to v1.0":  decoded(func(msg *legacya2a.Message) (any, error) { return a2av0.ToV1Message(msg) }),
	"HTTP+JSON v0.3 task to v1.0": func(data []byte) ([]byte, bool) {
		return marshalOf(func() (any, error) { return pbjson.FromProtoTask(data) })
	},
	"HTTP+JSON v0.3 message to v1.0": func(data []byte) ([]byte, bool) {
		return marshalOf(func() (any, error) {
			return pbjson.FromProtoSendMessageResponse(append(append([]byte(`{"message":`), data...), '}'))
		})
	},
	// A round trip v1.0 → v0.3 → v1.0 ends where a2a-go's ends: where it started,
	// but for what a2a-go's conversions lose or change (a data part marked
	// data_part_compat by its sender; a message's referenceTaskIds in proto JSON).
	"v1.0 task to JSON-RPC v0.3 and back": decoded(func(task *a2a.Task) (any, error) { return a2av0.ToV1Task(a2av0.FromV1Task(task)) }),
	"v1.0 task to HTTP+JSON v0.3 and back": decoded(func(task *a2a.Task) (any, error) {
		b, err := pbjson.ToProtoTask(task)
		if err != nil {
			return nil, err
		}
		return pbjson.FromProtoTask(b)
	}),
}

// protoMessage returns the proto JSON of msg, as v0.3's HTTP+JSON carries it.
func protoMessage(msg *a2a.Message) (json.RawMessage, error) {
	b, err := pbjson.ToProtoSendMessageResult(msg)
	var v struct{ Message json.RawMessage }
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	return v.Message, err
}

// conversionSamples returns tasks and messages with every kind of part, state and
// role, as v1.0 JSON and in v0.3's two shapes, and inputs that a2a-go's conversions
// treat in their own ways.
func conversionSamples(t testing.TB) [][]byte {
	ts := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.FixedZone("X", 3600))
	raw := a2a.NewRawPart([]byte("raw \x00 bytes"))
	raw.Filename, raw.MediaType = "r.bin", "application/octet-stream"
	text := a2a.NewTextPart("hello <&>")
	text.Metadata = map[string]any{"k": "v"}
	compat := a2a.NewDataPart(map[string]any{"value": 1.0})
	compat.Metadata = map[string]any{"data_part_compat": true, "other": 2.0}
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
			pb, err = protoMessage(v)
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
	for _, s := range []string{
		`{"id":"t","status":{"state":"unknown"},"history":[null],"artifacts":[null]}`,
		`{"kind":5,"messageId":"m","parts":[{"kind":"data","data":null,"metadata":{"data_part_compat":true}}]}`,
		`{"messageId":"m","parts":[{"kind":"file","file":{"bytes":"not base64!"}}]}`,
		`{"messageId":"m","content":[{"file":{"fileWithBytes":"bm90IGJhc2U2NCE="}},{"data":{}},{}]}`,
		`{"messageId":"m","parts":[{"url":""},{"text":"t","url":""}]}`,
		`{"id":"t","status":{"state":"TASK_STATE_CANCELLED","timestamp":"2026-11-30T12:00:00+05:00"}}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// conversionCases returns a2a-go's conversion of every sample, in every conversion
// that takes it, in a fixed order.
func conversionCases(t *testing.T) []conversionCase {
	names := make([]string, 0, len(a2aConversions))
	for name := range a2aConversions {
		names = append(names, name)
	}
	slices.Sort(names)
	var cases []conversionCase
	for _, data := range conversionSamples(t) {
		for _, name := range names {
			want, ok := a2aConversions[name](data)
			if !ok || string(want) == "null" {
				continue
			}
			cases = append(cases, conversionCase{Conversion: name, In: data, Want: want})
		}
	}
	return cases
}

// TestConversionFixtureIsA2AGo holds the middleware's conversion fixture to a2a-go's
// conversions.
func TestConversionFixtureIsA2AGo(t *testing.T) {
	first := conversionSamples(t)[0]
	if back, _ := a2aConversions["v1.0 task to HTTP+JSON v0.3 and back"](first); sameJSON(back, first) {
		t.Fatal("the proto round trip kept referenceTaskIds, which a2a-go drops: the samples miss them")
	}
	checkFixture(t, conversionsFixture, conversionCases(t))
}

// checkFixture fails when the fixture at path does not hold want (as JSON values),
// or writes want there with -update.
func checkFixture[T any](t *testing.T, path string, want []T) {
	t.Helper()
	if *update {
		// One entry a line: reviewable in a diff, without indentation's bulk.
		b := []byte("[\n")
		for i, w := range want {
			line, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				b = append(b, ",\n"...)
			}
			b = append(b, line...)
		}
		b = append(b, "\n]\n"...)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(got, b) {
		t.Fatalf("%s is not what a2a-go makes of its inputs; run go test -run %s -update here and review the diff",
			path, t.Name())
	}
}
