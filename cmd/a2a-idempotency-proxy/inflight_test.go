package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// refMethod is method as json.Decoder's tokens read it: FuzzMethod holds the walk
// to it.
func refMethod(head []byte) bool {
	d := json.NewDecoder(bytes.NewReader(head))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return false
		}
		if k == "method" {
			var m string
			return d.Decode(&m) == nil && rpcSendMethods[m]
		}
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

// FuzzMethod: on a valid JSON body, and on every prefix of one (the sidecar reads
// the first sniffBytes), method says what the decoder's reading says.
func FuzzMethod(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{}}}`,
		`{"id":{"a":[1,"}",{"b":"\""}]},"method":"message/send"}`,
		` {"m\u0065thod" : "SendStreamingMessage"}`,
		`{"params":{"method":"SendMessage"},"method":"GetTask"}`,
		`{"method":1}`, `{"method":null,"method":"SendMessage"}`, `{"Method":"SendMessage"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			method(body) // must not panic
			return
		}
		for n := len(body); n >= 0; n-- {
			if got, want := method(body[:n]), refMethod(body[:n]); got != want {
				t.Fatalf("method(%q) = %v, the decoder reads %v", body[:n], got, want)
			}
		}
	})
}
