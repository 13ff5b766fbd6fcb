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
	size := int64(sniffBytes)
	if r.ContentLength >= 0 && r.ContentLength < size {
		size = r.ContentLength + 1 // +1 to see the end of the body
	}
	head := make([]byte, size)
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
// is a send: the first member whose name, unquoted, is "method", read by one walk over
// the bytes (no tokens, no allocation but for names or values with escapes). head
// may end anywhere; a member cut off is not read.
func method(head []byte) bool {
	i := jsonSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return false
	}
	for i = jsonSpace(head, i+1); i < len(head) && head[i] == '"'; i = jsonSpace(head, i+1) {
		end := jsonSkip(head, i)
		if end < 0 {
			return false
		}
		name := head[i:end]
		if i = jsonSpace(head, end); i >= len(head) || head[i] != ':' {
			return false
		}
		i = jsonSpace(head, i+1)
		if end = jsonSkip(head, i); end < 0 {
			return false
		}
		if jsonString(name) == "method" {
			m := jsonString(head[i:end])
			return m != "" && rpcSendMethods[m]
		}
		if i = jsonSpace(head, end); i >= len(head) || head[i] != ',' {
			return false
		}
	}
	return false
}

// jsonString returns the JSON string raw unquoted, or "" when it is not one.
func jsonString(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// jsonSpace returns the index of the first byte of d from i on that is not JSON
// white space.
func jsonSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// jsonSkip returns the index just past the JSON value that starts at d[i], or -1
// when d ends before it does.
func jsonSkip(d []byte, i int) int {
	if i >= len(d) {
		return -1
	}
	switch d[i] {
	case '"':
		for i++; i < len(d); i++ {
			switch d[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for ; i < len(d); i++ {
			switch d[i] {
			case '"':
				end := jsonSkip(d, i)
				if end < 0 {
					return -1
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for ; i < len(d); i++ { // a number or a literal
		switch d[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return -1
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
