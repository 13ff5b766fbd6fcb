package member

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// fields are the names the middleware reads; reference decodes them as
// encoding/json does.
type fields struct {
	ID             json.RawMessage `json:"id"`
	TaskID         json.RawMessage `json:"taskId"`
	Task           json.RawMessage `json:"task"`
	Message        json.RawMessage `json:"message"`
	StatusUpdate   json.RawMessage `json:"statusUpdate"`
	ArtifactUpdate json.RawMessage `json:"artifactUpdate"`
	Result         json.RawMessage `json:"result"`
	Error          json.RawMessage `json:"error"`
}

func (f *fields) at(name string) *json.RawMessage {
	switch name {
	case "id":
		return &f.ID
	case "taskId":
		return &f.TaskID
	case "task":
		return &f.Task
	case "message":
		return &f.Message
	case "statusUpdate":
		return &f.StatusUpdate
	case "artifactUpdate":
		return &f.ArtifactUpdate
	case "result":
		return &f.Result
	}
	return &f.Error
}

var names = []string{"id", "taskId", "task", "message", "statusUpdate", "artifactUpdate", "result", "error"}

// walk reads data into fields with Members, NameIs and the last-member-wins rule.
func walk(data []byte) (fields, bool) {
	var f fields
	o, ok := Members(data)
	if !ok {
		return f, false
	}
	for name, value, ok := o.Next(); ok; name, value, ok = o.Next() {
		for _, n := range names {
			if NameIs(name, n) {
				*f.at(n) = value
			}
		}
	}
	return f, true
}

// check holds walk to encoding/json on data, and String to json.Unmarshal on every
// string value.
func check(t *testing.T, data []byte) {
	t.Helper()
	if !json.Valid(data) {
		walk(data) // must not panic
		return
	}
	var want fields
	err := json.Unmarshal(data, &want)
	got, ok := walk(data)
	isObject := len(bytes.TrimSpace(data)) > 0 && bytes.TrimSpace(data)[0] == '{'
	if ok != isObject || (err == nil) != (isObject || string(bytes.TrimSpace(data)) == "null") {
		t.Fatalf("%q: Members ok %v, json.Unmarshal error %v", data, ok, err)
	}
	if !ok {
		return
	}
	for _, n := range names {
		if w, g := *want.at(n), *got.at(n); !bytes.Equal(w, g) {
			t.Fatalf("%q: member %s: got %q, encoding/json %q", data, n, g, w)
		}
	}
	o, _ := Members(data)
	for _, value, ok := o.Next(); ok; _, value, ok = o.Next() {
		var ws string
		werr := json.Unmarshal(value, &ws)
		gs, gok := String(value)
		if gok != (werr == nil && value[0] == '"') || gok && gs != ws {
			t.Fatalf("%q: String(%q) = %q, %v; encoding/json %q, %v", data, value, gs, gok, ws, werr)
		}
	}
}

var seeds = []string{
	`{"id":"t-1"}`,
	` { "id" : "t-1" , "contextId":"c"} `,
	`{"ID":"a","Id":"b","iD":"c"}`,
	`{"i\u0064":"escaped"}`,
	`{"\u0069d":"escaped"}`,
	`{"\u0131d":"dotless i"}`,
	`{"ıd":"dotless i raw"}`,
	`{"İd":"dotted capital I"}`,
	`{"tas\u212Aid":"kelvin"}`,
	`{"taſkId":"long s"}`,
	`{"taskId":"a","taskId":null}`,
	`{"task":{"id":"x","history":[{"a":"}\"]"}]},"task":null}`,
	`{"message":{"parts":[{"text":"\\\"quoted\\\\"}]}}`,
	`{"result":{"task":{"id":"t"}},"error":null}`,
	`{"error":{"code":-32001,"message":"x"}}`,
	`{"id":"\ud800"}`,
	`{"id":"caf\u00e9","task":"\u00ff\xff"}`,
	"{\"id\":\"\xc3\x28\"}",
	`{"a":[1,2,{"b":[]}],"id":true,"id":-1.5e3}`,
	`[{"id":"x"}]`,
	`null`,
	`"id"`,
	`{}`,
	`{"id":"x"`,
	`{"id" "x"}`,
	`{"id":`,
	`{"`,
}

func TestMembersAgainstEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		check(t, []byte(s))
	}
}

func FuzzMembers(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { check(t, data) })
}

// landsIn reports whether encoding/json decodes a member named key into a struct
// field tagged field (one of mayHaveFields).
func landsIn(key, field string) bool {
	q, _ := json.Marshal(key)
	probe := append(append([]byte("{"), q...), `:1}`...)
	s := reflect.New(reflect.StructOf([]reflect.StructField{
		{Name: "F", Type: reflect.TypeFor[*int](), Tag: reflect.StructTag(`json:"` + field + `"`)},
	}))
	return json.Unmarshal(probe, s.Interface()) == nil && !s.Elem().Field(0).IsNil()
}

var mayHaveFields = []string{"method", "error", "jsonrpc", "taskId"}

// keys returns every object member name in the decoded JSON value v, at any depth.
func keys(v any, out []string) []string {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			out = keys(e, append(out, k))
		}
	case []any:
		for _, e := range v {
			out = keys(e, out)
		}
	}
	return out
}

func checkMayHave(t *testing.T, data []byte) {
	t.Helper()
	var v any
	if json.Unmarshal(data, &v) != nil {
		// Decoders that stop at the first value (json.Decoder) accept a valid
		// prefix: check that prefix.
		dec := json.NewDecoder(bytes.NewReader(data))
		if dec.Decode(&v) != nil {
			return
		}
	}
	for _, field := range mayHaveFields {
		if MayHave(data, field) {
			continue
		}
		for _, k := range keys(v, nil) {
			if landsIn(k, field) {
				t.Fatalf("MayHave(%q, %q) = false, but member %q decodes into it", data, field, k)
			}
		}
	}
}

var mayHaveSeeds = []string{
	`{"jsonrpc":"2.0","method":"SendMessage","id":1}`,
	`{"METHOD":"SendMessage"}`,
	`{"Method":"SendMessage"}`,
	`{"m\u0065thod":"SendMessage"}`,
	`{"\u006Dethod":"SendMessage"}`,
	`{"\u004d\u0045THOD":"SendMessage"}`,
	`{"message":{"parts":[{"text":"method"}]},"method" :"x"}`,
	"{\"method\"\t:\"SendMessage\"}",
	`{"params":{"method":"nested"}}`,
	`[{"method":"in an array"}]`,
	`{"json\u0072pc":"2.0"}`,
	`{"jſonrpc":"2.0"}`,
	`{"ta\u017FkId":"t"}`,
	"{\"taskId\xe2\x84\xaa\":\"t\"}",
	`{"tas` + "\u212A" + `Id":"t"}`,
	`{"taskıd":"t"}`,
	`{"ERROR":{"code":500}}`,
	`{"err\u006fr":{}}`,
	`{"error":1}{"method":2}`,
	`{"x":"\"method\""}`,
	`{"x":"method"}`,
}

func TestMayHave(t *testing.T) {
	for _, s := range mayHaveSeeds {
		checkMayHave(t, []byte(s))
	}
	for _, tc := range []struct {
		data, field string
		want        bool
	}{
		{`{"message":{"messageId":"m","parts":[{"text":"hi"}]}}`, "method", false},
		{`{"message":{"messageId":"m"},"methods":1}`, "method", false},
		{`{"task":{"id":"t"}}`, "error", false},
		{`{"METHOD":1}`, "method", true},
		{`{"m\u0065thod":1}`, "method", true},
		{`{"ſ":1}`, "jsonrpc", true}, // beyond ASCII, and the field has an s
		{`{"é":1}`, "method", false}, // beyond ASCII, but no i, s or k in the field
	} {
		if got := MayHave([]byte(tc.data), tc.field); got != tc.want {
			t.Errorf("MayHave(%s, %s) = %v, want %v", tc.data, tc.field, got, tc.want)
		}
	}
}

func FuzzMayHave(f *testing.F) {
	for _, s := range mayHaveSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkMayHave(t, data) })
}
