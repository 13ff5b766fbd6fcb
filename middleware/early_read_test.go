package middleware

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// refRenameMethod is renameMethod as json.Decoder's tokens made it: FuzzRenameMethod
// holds the byte splice to it on valid JSON.
func refRenameMethod(body []byte, method string) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	start, end := -1, -1
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if strings.EqualFold(name, "method") {
			end = int(dec.InputOffset())
			start = end - len(v)
		}
	}
	if start < 0 {
		return nil, false
	}
	out := append([]byte(nil), body[:start]...)
	out = append(append(append(out, '"'), method...), '"')
	return append(out, body[end:]...), true
}

// FuzzRenameMethod: on a valid JSON object, the renamed body is the one the
// decoder's reading made, and encoding/json reads the new method from it, and
// every other member as before.
func FuzzRenameMethod(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","method":"x"}}}`,
		`{"method":"a","METHOD":"b"}`,
		`{"m\u0065thod":"SendMessage", "id":"1"}`,
		` { "method" : "SendMessage" } `,
		`{"id":1}`,
		`{"method":"a"} {"method":"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := renameMethod(body, methodSendStreamingMessage)
		if !json.Valid(body) {
			if ok {
				t.Fatalf("renamed a body that is not valid JSON: %q", body)
			}
			return
		}
		want, wantOK := refRenameMethod(body, methodSendStreamingMessage)
		if !ok {
			var call struct{ Method *json.RawMessage }
			if json.Unmarshal(body, &call) == nil && call.Method != nil {
				t.Fatalf("did not rename %q, whose method encoding/json reads", body)
			}
			return
		}
		var call struct{ Method string }
		if err := json.Unmarshal(got, &call); err != nil || call.Method != methodSendStreamingMessage {
			t.Fatalf("%q renamed to %q: encoding/json reads method %q (%v)", body, got, call.Method, err)
		}
		if wantOK && !bytes.Equal(got, want) && !hasNonASCIIOrEscape(body) {
			t.Fatalf("%q renamed to %q; the decoder's reading made %q", body, got, want)
		}
	})
}

// hasNonASCIIOrEscape reports whether names may fold as encoding/json folds them
// and strings.EqualFold does not (the Kelvin sign, the long s): there the splice
// follows encoding/json, the reference does not.
func hasNonASCIIOrEscape(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || c == '\\' {
			return true
		}
	}
	return false
}

// refReturnsImmediately is returnsImmediately as json.Unmarshal made it:
// FuzzReturnsImmediately holds the walk to it.
func refReturnsImmediately(d dialect, body []byte) bool {
	type config struct {
		Configuration struct {
			ReturnImmediately json.RawMessage `json:"returnImmediately"`
		} `json:"configuration"`
	}
	var c config
	if _, ok := d.(jsonrpc10); ok {
		var call struct {
			Params config `json:"params"`
		}
		_ = json.Unmarshal(body, &call)
		c = call.Params
	} else {
		_ = json.Unmarshal(body, &c)
	}
	return bytes.Equal(bytes.TrimSpace(c.Configuration.ReturnImmediately), []byte("true"))
}

func FuzzReturnsImmediately(f *testing.F) {
	for _, s := range []string{
		`{"method":"SendMessage","params":{"message":{},"configuration":{"returnImmediately":true}}}`,
		`{"params":{"configuration":{"returnImmediately":true}},"params":{"configuration":null}}`,
		`{"params":{"configuration":{"returnImmediately":true}},"params":{"configuration":{"returnImmediately":null}}}`,
		`{"PARAMS":{"Configuration":{"returnimmediately": true }},"params":7}`,
		`{"configuration":{"returnImmediately":true}}`, `{"configuration":{"returnImmediately":"true"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, d := range []dialect{jsonrpc10{}, rest10{}} {
			if got, want := returnsImmediately(d, body), refReturnsImmediately(d, body); got != want {
				t.Fatalf("%T %q: %v, encoding/json reads %v", d, body, got, want)
			}
		}
	})
}
