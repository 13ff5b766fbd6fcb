package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

// sniffBytes bounds how much of a JSON-RPC body the sidecar reads to learn its
// method: every SDK writes "method" before "params".
const sniffBytes = 4 << 10

// rpcSendMethods are the JSON-RPC methods that send a message, in A2A v1.0 and v0.3.
var rpcSendMethods = map[string]bool{
	"SendMessage": true, "SendStreamingMessage": true, "message/send": true, "message/stream": true,
}

// countSends keeps gauge's count of the sends in flight through next: HTTP+JSON
// POSTs to .../message:send or .../message:stream, and JSON-RPC POSTs whose method
// (read from the first sniffBytes of the body, which then reaches next whole) is a
// send.
func countSends(next http.Handler, inc func(delta int64), limit *bodyLimit) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !limit.bounds(r) || !isSend(r) {
			next.ServeHTTP(w, r)
			return
		}
		inc(1)
		defer inc(-1)
		next.ServeHTTP(w, r)
	})
}

// isSend reports whether the POST r is a send; it may replace r.Body with one that
// gives the same bytes.
func isSend(r *http.Request) bool {
	if isRESTSend(r) {
		return true
	}
	if r.Body == nil || r.Body == http.NoBody {
		return false
	}
	head := make([]byte, sniffBytes)
	n := 0
	var err error
	for n < len(head) && err == nil {
		var m int
		m, err = r.Body.Read(head[n:])
		n += m
		if t := bytes.TrimLeft(head[:n], " \t\r\n"); len(t) > 0 && t[0] != '{' {
			break // not JSON-RPC
		}
	}
	head = head[:n]
	rest := r.Body
	if err != nil {
		rest = readCloser{errReader{err}, r.Body}
	}
	r.Body = readCloser{io.MultiReader(bytes.NewReader(head), rest), r.Body}
	return method(head)
}

// method reports whether the top-level "method" of the JSON object that head begins
// is a send.
func method(head []byte) bool {
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

// readCloser reads from r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (rc readCloser) Close() error { return rc.c.Close() }

// errReader returns err (io.EOF included) once its bytes before are read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
