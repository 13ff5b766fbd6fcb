package main

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/a2akit/idempotency/middleware"
)

// bodyLimit bounds the body of every request the sidecar forwards, except under the
// unbounded path prefixes: a body that announces more than limit bytes is answered
// 413 before anything is forwarded, and one that turns out longer while it streams
// is cut after limit bytes (the upstream never receives more) and answered 413 when
// the upstream has not answered yet. 413 has the shape of the binding the path
// names (middleware.WriteTooLarge), as the middleware's own for the JSON bodies it
// reads. It runs inside the middleware, which reads JSON-object bodies itself,
// bounded by the same limit.
type bodyLimit struct {
	limit     int64
	unbounded []string
}

// bounds reports whether r's body is bounded.
func (b *bodyLimit) bounds(r *http.Request) bool {
	for _, p := range b.unbounded {
		if strings.HasPrefix(r.URL.Path, p) {
			return false
		}
	}
	return true
}

// reads is the middleware's Options.Reads: it reads no body under the unbounded
// prefixes, which are not A2A.
func (b *bodyLimit) reads(r *http.Request) bool { return b.bounds(r) }

func (b *bodyLimit) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || !b.bounds(r) {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > b.limit {
			middleware.WriteTooLarge(w, r, b.limit)
			return
		}
		r.Body = &limitedBody{r: r.Body, left: b.limit}
		next.ServeHTTP(w, r)
	})
}

// errBodyTooLarge is the error of a limitedBody read past its limit.
var errBodyTooLarge = errors.New("request body over -max-body-bytes")

// limitedBody reads at most left bytes of r, then fails with errBodyTooLarge when r
// has more.
type limitedBody struct {
	r    io.ReadCloser
	left int64
	over bool
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.over {
		return 0, errBodyTooLarge
	}
	if l.left <= 0 {
		// At the limit: one more byte tells whether the body ends here.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			l.over = true
			return 0, errBodyTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedBody) Close() error { return l.r.Close() }

// tooLarge reports whether err is a forward cut by the body limit.
func tooLarge(err error) bool { return errors.Is(err, errBodyTooLarge) }
